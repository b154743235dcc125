// Oracle implementation: symmetric EXCEPT ALL over the rows' text forms,
// which also covers column types that lack an equality operator (json,
// point) and is stricter than equality (1.0 vs 1.00 differ).
// Invariant: the defining query comes from the catalog as the user wrote
// it, not from our deparsed form, so a deparse bug cannot hide itself.
#include "oracle.hpp"

namespace pgt::e2e {

namespace {

std::string strip_trailing_semicolons(std::string q) {
    while (!q.empty() && (q.back() == ';' || isspace(static_cast<unsigned char>(q.back())))) {
        q.pop_back();
    }
    return q;
}

}  // namespace

::testing::AssertionResult matches_query(Conn& conn, const std::string& st_name) {
    std::string query = strip_trailing_semicolons(
        conn.scalar("SELECT defining_query FROM pgtrickle.pgt_stream_tables "
                    "WHERE pgt_relid = $1::regclass",
                    {st_name}));
    std::string cols = conn.scalar(
        "SELECT coalesce(string_agg(quote_ident(attname), ', ' ORDER BY attnum), '') "
        "FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attname NOT LIKE '\\_\\_pgt\\_%'",
        {st_name});
    // Aliases start with __pgt_: no user column can be named so, so `alias::text`
    // is always the whole row. st_name is a SQL name, quoted as needed.
    std::string st_rows =
        "SELECT __pgt_s::text AS r FROM (SELECT " + cols + " FROM " + st_name + ") __pgt_s";
    std::string q_rows = "SELECT __pgt_q::text AS r FROM (" + query + ") __pgt_q";
    Result diff = conn.exec("(SELECT 'extra' AS side, r FROM (" + st_rows + " EXCEPT ALL " +
                            q_rows + ") e) UNION ALL (SELECT 'missing', r FROM (" + q_rows +
                            " EXCEPT ALL " + st_rows + ") m) ORDER BY 1, 2 LIMIT 50");
    if (diff.size() == 0) {
        return ::testing::AssertionSuccess();
    }
    auto failure = ::testing::AssertionFailure();
    failure << "stream table " << st_name << " differs from its defining query (" << query
            << "):\n";
    for (size_t i = 0; i < diff.size(); i++) {
        failure << "  " << diff.at(i, 0) << ": " << diff.at(i, 1) << "\n";
    }
    return failure;
}

}  // namespace pgt::e2e
