// Creation and removal of change buffers and capture triggers.
// Invariant: buffer columns mirror the source's base types and collations,
// so a filter evaluated over a buffer image compares like the source does.
#include "pg/cdc/change_buffer.hpp"

#include "pg/api/names.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/catalog/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
}

namespace pgt::pg {

namespace {

const std::string kSources = std::string(pgt::catalog::kSchema) + "." + pgt::catalog::kSources;

struct BufferColumn {
    int attnum;
    std::string type;       // format_type_with_typemod of the base type
    std::string collation;  // COLLATE clause or ""
};

// Base type, typmod and collation of every live source column.
std::vector<BufferColumn> buffer_columns(Oid relid) {
    std::vector<BufferColumn> out;
    with_pinned_search_path([&] {
        std::vector<std::pair<int, char*>> types;
        std::vector<char*> colls;
        pg_call([&] {
            Relation rel = relation_open(relid, AccessShareLock);
            TupleDesc desc = RelationGetDescr(rel);
            for (int i = 0; i < desc->natts; i++) {
                Form_pg_attribute att = TupleDescAttr(desc, i);
                if (att->attisdropped) {
                    continue;
                }
                int32 typmod = att->atttypmod;
                Oid base = getBaseTypeAndTypmod(att->atttypid, &typmod);
                types.emplace_back(att->attnum, format_type_with_typemod(base, typmod));
                colls.push_back(OidIsValid(att->attcollation)
                                    ? generate_collation_name(att->attcollation)
                                    : nullptr);
            }
            relation_close(rel, AccessShareLock);
        });
        for (size_t i = 0; i < types.size(); i++) {
            out.push_back({types[i].first, types[i].second,
                           colls[i] ? std::string(" COLLATE ") + colls[i] : ""});
        }
    });
    return out;
}

std::string buffer_ddl(const std::string& buffer, Oid source_relid) {
    std::string cols =
        "seq pg_catalog.int8 GENERATED ALWAYS AS IDENTITY, xid pg_catalog.xid8 NOT NULL, "
        "action pg_catalog.\"char\" NOT NULL";
    for (const BufferColumn& c : buffer_columns(source_relid)) {
        for (char side : {'o', 'n'}) {
            cols +=
                ", " + std::string(1, side) + std::to_string(c.attnum) + " " + c.type + c.collation;
        }
    }
    return "CREATE TABLE " + buffer + " (" + cols + ")";
}

void create_capture(Spi& spi, int64_t id, Oid source_relid, const std::string& buffer) {
    std::string src = quoted_relation_name(source_relid);
    std::string arg = sql_literal(buffer);
    std::string trig = "pgt_capture_" + std::to_string(id);
    catalog::exec_as_owner(spi, buffer_ddl(buffer, source_relid));
    catalog::exec_as_owner(spi, "REVOKE ALL ON " + buffer + " FROM PUBLIC");
    catalog::exec_as_owner(spi, "CREATE TRIGGER " + trig + " AFTER INSERT OR UPDATE OR DELETE ON " +
                                    src + " FOR EACH ROW EXECUTE FUNCTION pgtrickle._capture_row(" +
                                    arg + ")");
    catalog::exec_as_owner(spi, "CREATE TRIGGER " + trig + "_truncate AFTER TRUNCATE ON " + src +
                                    " FOR EACH STATEMENT EXECUTE FUNCTION "
                                    "pgtrickle._capture_truncate(" +
                                    arg + ")");
}

}  // namespace

std::vector<ir::SourceColumn> source_columns(Oid relid) {
    std::vector<std::pair<int, char*>> names;
    pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        for (int i = 0; i < desc->natts; i++) {
            Form_pg_attribute att = TupleDescAttr(desc, i);
            if (!att->attisdropped) {
                names.emplace_back(att->attnum, pstrdup(quote_identifier(NameStr(att->attname))));
            }
        }
        relation_close(rel, AccessShareLock);
    });
    std::vector<ir::SourceColumn> out;
    for (auto& [attnum, name] : names) {
        out.push_back({attnum, name});
    }
    return out;
}

CaptureSource ensure_capture(Spi& spi, Oid source_relid) {
    SpiRows r = spi.query("SELECT source_id, buffer_name FROM " + kSources +
                              " WHERE source_relid OPERATOR(pg_catalog.=) $1",
                          {oid_param(source_relid)});
    if (!r.rows.empty()) {
        return {std::stoll(*r.rows[0][0]), source_relid, *r.rows[0][1]};
    }
    std::string id =
        *catalog::query_as_owner(spi, "SELECT pg_catalog.nextval('" + kSources + "_source_id_seq')")
             .rows.at(0)
             .at(0);
    std::string buffer = std::string(pgt::catalog::kChangesSchema) + ".changes_" + id;
    catalog::exec_as_owner(
        spi,
        "INSERT INTO " + kSources + " (source_id, source_relid, buffer_name) VALUES ($1, $2, $3)",
        {int8_param(std::stoll(id)), oid_param(source_relid), text_param(buffer)});
    create_capture(spi, std::stoll(id), source_relid, buffer);
    return {std::stoll(id), source_relid, buffer};
}

void release_capture_if_unused(Spi& spi, int64_t source_id) {
    SpiRows r = spi.query(
        "SELECT s.source_relid, s.buffer_name FROM " + kSources +
            " s WHERE s.source_id OPERATOR(pg_catalog.=) $1 AND NOT EXISTS (SELECT 1 FROM "
            "pgtrickle.pgt_frontiers f WHERE f.source_id OPERATOR(pg_catalog.=) s.source_id)",
        {int8_param(source_id)});
    if (r.rows.empty()) {
        return;
    }
    Oid relid = static_cast<Oid>(std::stoul(*r.rows[0][0]));
    // The catalog row goes first, so the sql_drop hook (which also removes
    // orphaned captures) finds nothing left to do for the drops below.
    catalog::exec_as_owner(spi,
                           "DELETE FROM " + kSources + " WHERE source_id OPERATOR(pg_catalog.=) $1",
                           {int8_param(source_id)});
    std::string trig = "pgt_capture_" + std::to_string(source_id);
    if (pg_call([&] { return get_rel_name(relid) != nullptr; })) {
        std::string src = quoted_relation_name(relid);
        catalog::exec_as_owner(spi, "DROP TRIGGER " + trig + " ON " + src);
        catalog::exec_as_owner(spi, "DROP TRIGGER " + trig + "_truncate ON " + src);
    }
    catalog::exec_as_owner(spi, "DROP TABLE " + *r.rows[0][1]);
}

std::vector<CaptureSource> captured_sources_of(Spi& spi, int64_t pgt_id) {
    SpiRows r = spi.query("SELECT s.source_id, s.source_relid, s.buffer_name FROM " + kSources +
                              " s JOIN pgtrickle.pgt_frontiers f USING (source_id)"
                              " WHERE f.pgt_id OPERATOR(pg_catalog.=) $1 ORDER BY s.source_id",
                          {int8_param(pgt_id)});
    std::vector<CaptureSource> out;
    for (const auto& row : r.rows) {
        out.push_back({std::stoll(*row[0]), static_cast<Oid>(std::stoul(*row[1])), *row[2]});
    }
    return out;
}

}  // namespace pgt::pg
