// Row identity V2 from PostgreSQL datums: the per-call-site encoder state of
// pgtrickle.encode_row_id_v2 (kept in fn_extra) and the one function that
// turns a composite datum into identity bytes (docs/row-identity-v2.md §13).
// Invariant: the per-row path reads stored representations only — no catalog
// or fmgr lookup, no output/send function, no ::text — and every catalog fact
// comes from a plan built the first time a (type id, typmod) is seen.
#pragma once

#include "core/rowid/format.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

namespace pgt::pg {

// What precedes the tuple: the domain and, for SYNTHETIC only, the
// discriminator.
struct IdentityHeader {
    rowid::Domain domain = rowid::Domain::kScanKey;
    rowid::Synthetic synthetic = rowid::Synthetic::kScalarAggregateSingleton;
};

class IdentityCallSite;  // encoder, plans and scratch of one call site

// The call site's state in fcinfo->flinfo->fn_extra, created on first use
// and destroyed when fn_mcxt is reset or deleted.
IdentityCallSite& identity_call_site(FunctionCallInfo fcinfo);

// Encodes the fields of the composite datum `record` (not NULL) as one
// identity; returns a bytea palloc'd in CurrentMemoryContext. Errors are
// pgt::Error (0A000 unsupported field type, 54000 limits, 22023 bad input).
Datum encode_identity(IdentityCallSite& site, const IdentityHeader& header, Datum record);

}  // namespace pgt::pg
