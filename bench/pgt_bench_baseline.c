/* Benchmark-only baseline module: the text-cast-and-hash row identity that
 * row identity V2 replaced, as bench_text_hash(text) -> 16-byte xxh3_128 and
 * bench_text_hash_int8(text) -> its first 8 bytes as int8 (a V1-style bigint).
 * Invariant: never installed; loaded only by the benchmark driver from its
 * absolute build path, and it hashes exactly the text bytes it is given. */
#include "postgres.h"
#include "fmgr.h"

#include <xxhash.h>

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(bench_text_hash);
PG_FUNCTION_INFO_V1(bench_text_hash_int8);

/* bench_text_hash(text) RETURNS bytea: XXH128_canonicalFromHash bytes. */
Datum bench_text_hash(PG_FUNCTION_ARGS) {
    text* t = PG_GETARG_TEXT_PP(0);
    XXH128_hash_t h = XXH3_128bits(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
    XXH128_canonical_t c;
    bytea* out = (bytea*)palloc(VARHDRSZ + sizeof(c.digest));

    XXH128_canonicalFromHash(&c, h);
    SET_VARSIZE(out, VARHDRSZ + sizeof(c.digest));
    memcpy(VARDATA(out), c.digest, sizeof(c.digest));
    PG_RETURN_BYTEA_P(out);
}

/* bench_text_hash_int8(text) RETURNS int8: the high 64 bits of the same hash
 * (the first 8 canonical bytes read big-endian), as a signed bigint. */
Datum bench_text_hash_int8(PG_FUNCTION_ARGS) {
    text* t = PG_GETARG_TEXT_PP(0);
    XXH128_hash_t h = XXH3_128bits(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));

    PG_RETURN_INT64((int64)h.high64);
}
