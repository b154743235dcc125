// The catalog tables of the install script and their C++ mirror agree:
// names, column order and types.
// Invariant: a column added on one side only fails here.
#include "fixture.hpp"
#include "pg/catalog/catalog_schema.hpp"

namespace pgt::e2e {
namespace {

class CatalogMirror : public DbTest {
protected:
    template <size_t N>
    void expect_mirror(const char* table, const pgt::catalog::ColumnDef (&cols)[N]) {
        std::string qualified = std::string(pgt::catalog::kSchema) + "." + table;
        Result r = db->exec(
            "SELECT attnum, attname, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            {qualified});
        ASSERT_EQ(r.size(), N) << qualified;
        for (size_t i = 0; i < N; i++) {
            EXPECT_EQ(r.at(i, 0), std::to_string(cols[i].attnum)) << qualified;
            EXPECT_EQ(r.at(i, 1), cols[i].name) << qualified;
            EXPECT_EQ(r.at(i, 2), cols[i].type) << qualified << "." << cols[i].name;
        }
    }
};

TEST_F(CatalogMirror, catalog_mirror_matches_install_script) {
    expect_mirror(pgt::catalog::kStreamTables, pgt::catalog::kStreamTableColumns);
    expect_mirror(pgt::catalog::kDependencies, pgt::catalog::kDependencyColumns);
    expect_mirror(pgt::catalog::kRefreshHistory, pgt::catalog::kRefreshHistoryColumns);
    expect_mirror(pgt::catalog::kSources, pgt::catalog::kSourceColumns);
    expect_mirror(pgt::catalog::kFrontiers, pgt::catalog::kFrontierColumns);
    expect_mirror(pgt::catalog::kKept, pgt::catalog::kKeptColumns);
    expect_mirror(pgt::catalog::kImmediate, pgt::catalog::kImmediateColumns);
}

TEST_F(CatalogMirror, catalog_tables_are_registered_for_pg_dump) {
    EXPECT_EQ(db->scalar("SELECT array_length(extconfig, 1) FROM pg_extension "
                         "WHERE extname = 'pg_trickle'"),
              "10");
}

// PUBLIC may name what is in pgtrickle_changes (the extension's statements
// name buffers while running as a stream table's owner) but create nothing
// there; the buffers themselves are readable by no role but their owner.
TEST_F(CatalogMirror, change_schema_grants_public_only_usage) {
    EXPECT_EQ(db->scalar("SELECT has_schema_privilege('public', 'pgtrickle_changes', 'CREATE')"),
              "f");
    db->exec("CREATE TABLE t (id int PRIMARY KEY, v int)");
    db->exec(
        "SELECT pgtrickle.create_stream_table('s', 'SELECT id, v FROM t', "
        "refresh_mode => 'DIFFERENTIAL')");
    EXPECT_EQ(db->scalar("SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE "
                         "c.relnamespace = 'pgtrickle_changes'::regnamespace AND a.grantee <> "
                         "c.relowner"),
              "0");
}

}  // namespace
}  // namespace pgt::e2e
