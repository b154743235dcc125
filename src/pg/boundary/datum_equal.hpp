// Equality of two stored datums of one column, without detoasting: the test
// both capture (no-op UPDATEs) and notifications (changed columns) use.
// Invariant: never reads TOAST; "equal" implies the same value, while a value
// stored in two forms (compressed vs plain) may count as different.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/datum.h"
}

namespace pgt::pg {

// Varlenas compare by content, so a 1-byte and a 4-byte header around the
// same bytes are equal (a row written before ADD COLUMN ... DEFAULT holds the
// default with a 4-byte header, a rewritten one with a short header); TOAST
// pointers compare as pointers (the same pointer means the same value).
inline bool stored_datums_equal(Datum a, Datum b, bool byval, int16 len) {
    if (byval || len != -1) {
        return datumIsEqual(a, b, byval, len);
    }
    Pointer pa = DatumGetPointer(a);
    Pointer pb = DatumGetPointer(b);
    if (VARATT_IS_EXTERNAL(pa) || VARATT_IS_EXTERNAL(pb) || VARATT_IS_COMPRESSED(pa) ||
        VARATT_IS_COMPRESSED(pb)) {
        return datumIsEqual(a, b, byval, len);
    }
    Size la = VARSIZE_ANY_EXHDR(pa);
    return la == VARSIZE_ANY_EXHDR(pb) && memcmp(VARDATA_ANY(pa), VARDATA_ANY(pb), la) == 0;
}

}  // namespace pgt::pg
