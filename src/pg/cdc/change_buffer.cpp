// Creation and removal of change buffers and capture triggers.
// Invariant: buffer columns mirror the source's base types and collations,
// so a filter evaluated over a buffer image compares like the source does.
#include "pg/cdc/change_buffer.hpp"

#include <algorithm>
#include <optional>
#include <tuple>

#include "pg/analyze/scan_shape.hpp"
#include "pg/common/type_facts.hpp"
#include "pg/common/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/boundary/guc.hpp"
#include "pg/catalog/catalog.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/security/rights.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "storage/lmgr.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "catalog/pg_class.h"
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

bool contains(const std::vector<int>& set, int v) {
    return std::find(set.begin(), set.end(), v) != set.end();
}

// Base type, typmod and collation of the given live source columns.
std::vector<BufferColumn> buffer_columns(Oid relid, const std::vector<int>& attnums) {
    std::vector<BufferColumn> out;
    with_pinned_search_path([&] {
        std::vector<std::pair<int, char*>> types;
        std::vector<char*> colls;
        pg_call([&] {
            Relation rel = relation_open(relid, AccessShareLock);
            TupleDesc desc = RelationGetDescr(rel);
            for (int i = 0; i < desc->natts; i++) {
                Form_pg_attribute att = TupleDescAttr(desc, i);
                if (att->attisdropped || !contains(attnums, att->attnum)) {
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

// "o<n> type [COLLATE c]" and "n<n> ..." for each given source column.
std::vector<std::string> column_defs(Oid source_relid, const std::vector<int>& attnums) {
    std::vector<std::string> defs;
    for (const BufferColumn& c : buffer_columns(source_relid, attnums)) {
        for (char side : {'o', 'n'}) {
            defs.push_back(std::string(1, side) + std::to_string(c.attnum) + " " + c.type +
                           c.collation);
        }
    }
    return defs;
}

}  // namespace

std::vector<std::string> buffer_column_types(Oid relid, const std::vector<int>& attnums) {
    std::vector<std::string> out;
    for (const BufferColumn& c : buffer_columns(relid, attnums)) {
        out.push_back(c.type + c.collation);
    }
    return out;
}

namespace {

std::string joined(const std::vector<std::string>& items, const std::string& before_each) {
    std::string out;
    for (const std::string& i : items) {
        out += (out.empty() ? "" : ", ") + before_each + i;
    }
    return out;
}

std::string attnum_list(const std::vector<int>& attnums) {
    std::string s;
    for (int a : attnums) {
        s += (s.empty() ? "" : ",") + std::to_string(a);
    }
    return s;
}

}  // namespace

// Capture fires whatever session_replication_role says: the changes a
// logical-replication subscriber or a replica-role session applies reach
// the stream tables too, and no session can skip capture by setting it.
void enable_always(Spi& spi, const std::string& quoted_source, const std::string& trigger) {
    catalog::exec_as_owner(
        spi, "ALTER TABLE " + quoted_source + " ENABLE ALWAYS TRIGGER " + quote_ident(trigger));
}

namespace {

// The row trigger depends on each column it captures (pg_depend, as a
// trigger's UPDATE OF list does), so PostgreSQL refuses ALTER COLUMN ...
// TYPE (0A000) and DROP COLUMN (2BP01) of a captured column instead of
// leaving a capture that can no longer store what the source holds.
void depend_on_columns(Oid source_relid, const std::string& trigger,
                       const std::vector<int>& attnums) {
    pg_call([&] {
        ObjectAddress self{TriggerRelationId, get_trigger_oid(source_relid, trigger.c_str(), false),
                           0};
        for (int a : attnums) {
            ObjectAddress column{RelationRelationId, source_relid, a};
            recordDependencyOn(&self, &column, DEPENDENCY_NORMAL);
        }
        CommandCounterIncrement();
    });
}

// (Re)creates the row trigger: its arguments are the buffer and the captured
// columns, so a widened capture gets a new trigger (and new cached plans).
void create_row_trigger(Spi& spi, int64_t id, Oid source_relid, const std::string& buffer,
                        const std::vector<int>& attnums, bool replace) {
    std::string src = quoted_relation_name(source_relid);
    std::string trig = "pgt_capture_" + std::to_string(id);
    if (replace) {
        // The old one goes once the new one is there: the sql_drop trigger
        // refuses to drop the last capture trigger of a table in use.
        catalog::exec_as_owner(
            spi, "ALTER TRIGGER " + trig + " ON " + src + " RENAME TO " + trig + "_replaced");
    }
    catalog::exec_as_owner(spi, "CREATE TRIGGER " + trig + " AFTER INSERT OR UPDATE OR DELETE ON " +
                                    src + " FOR EACH ROW EXECUTE FUNCTION pgtrickle._capture_row(" +
                                    sql_literal(buffer) + ", " + sql_literal(attnum_list(attnums)) +
                                    ", " + sql_literal(catalog::instance(spi)) + ")");
    enable_always(spi, src, trig);
    depend_on_columns(source_relid, trig, attnums);
    if (replace) {
        catalog::exec_as_owner(spi, "DROP TRIGGER " + trig + "_replaced ON " + src);
    }
}

void create_capture(Spi& spi, int64_t id, Oid source_relid, const std::string& buffer,
                    const std::vector<int>& attnums) {
    std::string src = quoted_relation_name(source_relid);
    catalog::exec_as_owner(spi, "CREATE TABLE " + buffer +
                                    " (seq pg_catalog.int8 GENERATED ALWAYS AS IDENTITY, "
                                    "xid pg_catalog.xid8 NOT NULL, action pg_catalog.\"char\" "
                                    "NOT NULL" +
                                    (attnums.empty() ? "" : ", ") +
                                    joined(column_defs(source_relid, attnums), "") + ")");
    // TRUNCATE markers only: a refresh finds a marker in its window without
    // scanning the buffer. Only the TRUNCATE trigger writes markers, through
    // the executor; rows captured by heap_insert are never markers, so
    // skipping this index for them leaves it complete.
    catalog::exec_as_owner(
        spi, "CREATE INDEX ON " + buffer + " (seq) WHERE action OPERATOR(pg_catalog.=) 'T'");
    catalog::exec_as_owner(spi, "REVOKE ALL ON " + buffer + " FROM PUBLIC");
    create_row_trigger(spi, id, source_relid, buffer, attnums, false);
    catalog::exec_as_owner(spi, "CREATE TRIGGER pgt_capture_" + std::to_string(id) +
                                    "_truncate AFTER TRUNCATE ON " + src +
                                    " FOR EACH STATEMENT EXECUTE FUNCTION "
                                    "pgtrickle._capture_truncate(" +
                                    sql_literal(buffer) + ", " +
                                    sql_literal(catalog::instance(spi)) + ")");
    enable_always(spi, src, "pgt_capture_" + std::to_string(id) + "_truncate");
    // Row triggers are cloned to partitions; the TRUNCATE one is not.
    if (pg_call([&] { return get_rel_relkind(source_relid); }) == RELKIND_PARTITIONED_TABLE) {
        catalog::exec_as_owner(spi, "SELECT pgtrickle._capture_partitions($1)", {int8_param(id)});
    }
}

// Adds the columns a new consumer needs to an existing capture.
void widen_capture(Spi& spi, const CaptureSource& src, const std::vector<int>& have,
                   const std::vector<int>& need) {
    std::vector<int> missing, all = have;
    for (int a : need) {
        if (!contains(have, a)) {
            missing.push_back(a);
            all.push_back(a);
        }
    }
    if (missing.empty()) {
        return;
    }
    std::sort(all.begin(), all.end());
    catalog::exec_as_owner(spi, "ALTER TABLE " + src.buffer + " " +
                                    joined(column_defs(src.relid, missing), "ADD COLUMN "));
    catalog::exec_as_owner(spi,
                           "UPDATE " + kSources +
                               " SET captured_columns = $2::pg_catalog.int2[]"
                               " WHERE source_id OPERATOR(pg_catalog.=) $1",
                           {int8_param(src.source_id), text_param("{" + attnum_list(all) + "}")});
    create_row_trigger(spi, src.source_id, src.relid, src.buffer, all, true);
}

}  // namespace

namespace {

struct ExistingCapture {
    CaptureSource source;
    std::vector<int> columns;
};

std::optional<ExistingCapture> existing_capture(Spi& spi, Oid source_relid) {
    SpiRows r = spi.query(
        "SELECT source_id, buffer_name, pg_catalog.array_to_string("
        "captured_columns, ',') FROM " +
            kSources + " WHERE source_relid OPERATOR(pg_catalog.=) $1",
        {oid_param(source_relid)});
    if (r.rows.empty()) {
        return std::nullopt;
    }
    ExistingCapture c{{std::stoll(*r.rows[0][0]), source_relid, *r.rows[0][1]}, {}};
    std::string list = r.rows[0][2].value_or("");
    for (size_t pos = 0; pos < list.size();) {
        size_t comma = list.find(',', pos);
        c.columns.push_back(std::stoi(list.substr(pos, comma - pos)));
        pos = comma == std::string::npos ? list.size() : comma + 1;
    }
    return c;
}

}  // namespace

namespace {

bool lacks_columns(const std::optional<ExistingCapture>& c, const std::vector<int>& attnums) {
    return !c || std::any_of(attnums.begin(), attnums.end(),
                             [&](int a) { return !contains(c->columns, a); });
}

}  // namespace

bool capture_would_change(Spi& spi, Oid source_relid, const std::vector<int>& attnums) {
    return lacks_columns(existing_capture(spi, source_relid), attnums);
}

CaptureSource ensure_capture(Spi& spi, Oid source_relid, const std::vector<int>& attnums) {
    std::optional<ExistingCapture> c = existing_capture(spi, source_relid);
    if (lacks_columns(c, attnums)) {
        check_capture_right(source_relid);
        // The lock its trigger would take anyway, first: another session
        // installing or widening this capture finishes before this one
        // looks again (a READ COMMITTED statement sees its commit), instead
        // of both creating it and the second failing on the catalog's key.
        pg_call([&] { LockRelationOid(source_relid, ShareRowExclusiveLock); });
        c = existing_capture(spi, source_relid);
    }
    if (c) {
        widen_capture(spi, c->source, c->columns, attnums);
        return c->source;
    }
    std::string id =
        *catalog::query_as_owner(spi, "SELECT pg_catalog.nextval('" + kSources + "_source_id_seq')")
             .rows.at(0)
             .at(0);
    std::string buffer = std::string(pgt::catalog::kChangesSchema) + ".changes_" + id;
    catalog::exec_as_owner(spi,
                           "INSERT INTO " + kSources +
                               " (source_id, source_relid, buffer_name, captured_columns)"
                               " VALUES ($1, $2, $3, $4::pg_catalog.int2[])",
                           {int8_param(std::stoll(id)), oid_param(source_relid), text_param(buffer),
                            text_param("{" + attnum_list(attnums) + "}")});
    create_capture(spi, std::stoll(id), source_relid, buffer, attnums);
    return {std::stoll(id), source_relid, buffer};
}

std::string repair_disabled_capture(Spi& spi, int64_t pgt_id) {
    SpiRows r = spi.query(
        "SELECT s.source_id, s.source_relid::pg_catalog.oid, (SELECT pg_catalog.count(*) FROM "
        "pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) s.source_relid AND "
        "t.tgname OPERATOR(pg_catalog.=) ANY (ARRAY['pgt_capture_' OPERATOR(pg_catalog.||) "
        "s.source_id, 'pgt_capture_' OPERATOR(pg_catalog.||) s.source_id OPERATOR(pg_catalog.||) "
        "'_truncate']::pg_catalog.name[])) FROM " +
            kSources +
            " s JOIN pgtrickle.pgt_frontiers f ON f.source_id OPERATOR(pg_catalog.=) s.source_id "
            "WHERE f.pgt_id OPERATOR(pg_catalog.=) $1 AND (SELECT pg_catalog.count(*) FROM "
            "pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) s.source_relid AND "
            "t.tgenabled OPERATOR(pg_catalog.=) 'A' AND t.tgname OPERATOR(pg_catalog.=) ANY "
            "(ARRAY['pgt_capture_' OPERATOR(pg_catalog.||) s.source_id, 'pgt_capture_' "
            "OPERATOR(pg_catalog.||) s.source_id OPERATOR(pg_catalog.||) "
            "'_truncate']::pg_catalog.name[])) OPERATOR(pg_catalog.<>) 2",
        {int8_param(pgt_id)});
    std::string repaired;
    for (const auto& row : r.rows) {
        const int64_t id = std::stoll(*row[0]);
        const Oid relid = static_cast<Oid>(std::stoul(*row[1]));
        const std::string table = relation_display_name(relid);
        if (*row[2] != "2") {
            throw pgt::Error("55000", "the change capture of table " + table + " is missing",
                             "A capture trigger of " + table +
                                 " was dropped; its changes no longer reach the stream tables "
                                 "reading it.",
                             "Drop and create again the stream tables that read " + table + ".");
        }
        const std::string src = quoted_relation_name(relid);
        const std::string trig = "pgt_capture_" + std::to_string(id);
        enable_always(spi, src, trig);
        enable_always(spi, src, trig + "_truncate");
        catalog::exec_as_owner(
            spi,
            "UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = COALESCE(reinit_reason, $2) "
            "WHERE pgt_id IN (SELECT f.pgt_id FROM pgtrickle.pgt_frontiers f WHERE f.source_id "
            "OPERATOR(pg_catalog.=) $1) AND pgt_id OPERATOR(pg_catalog.<>) $3",
            {int8_param(id), text_param("change capture of " + table + " had been disabled"),
             int8_param(pgt_id)});
        repaired += (repaired.empty() ? "" : ", ") + table;
    }
    return repaired;
}

std::vector<CaptureProblem> capture_problems(Spi& spi, int64_t pgt_id) {
    SpiRows r = spi.query(
        "SELECT s.source_id, s.source_relid::pg_catalog.oid, pg_catalog.to_regclass(s.buffer_name) "
        "IS "
        "NULL, "
        "n.tname, t.tgenabled FROM " +
            kSources +
            " s JOIN pgtrickle.pgt_frontiers f ON f.source_id OPERATOR(pg_catalog.=) s.source_id "
            "CROSS JOIN LATERAL (VALUES ('pgt_capture_' OPERATOR(pg_catalog.||) s.source_id), "
            "('pgt_capture_' OPERATOR(pg_catalog.||) s.source_id OPERATOR(pg_catalog.||) "
            "'_truncate')) n(tname) LEFT JOIN pg_catalog.pg_trigger t ON t.tgrelid "
            "OPERATOR(pg_catalog.=) s.source_relid AND t.tgname OPERATOR(pg_catalog.=) "
            "n.tname::pg_catalog.name WHERE f.pgt_id OPERATOR(pg_catalog.=) $1 ORDER BY "
            "s.source_id, n.tname",
        {int8_param(pgt_id)});
    std::vector<CaptureProblem> out;
    for (const auto& row : r.rows) {
        const int64_t id = std::stoll(*row[0]);
        if (out.empty() || out.back().source.source_id != id) {
            out.push_back({{id, static_cast<Oid>(std::stoul(*row[1])), ""}, {}});
            if (*row[2] == "t") {
                out.back().problems.push_back("change buffer missing");
            }
        }
        if (!row[4]) {
            out.back().problems.push_back("trigger " + *row[3] + " missing");
        } else if (*row[4] != "A") {
            out.back().problems.push_back("trigger " + *row[3] + " not ENABLE ALWAYS");
        }
    }
    std::vector<CaptureProblem> bad;
    for (CaptureProblem& p : out) {
        if (!p.problems.empty()) {
            bad.push_back(std::move(p));
        }
    }
    return bad;
}

void discard_capture(Spi& spi, int64_t source_id, const std::string& why) {
    catalog::exec_as_owner(
        spi,
        "UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = COALESCE(reinit_reason, $2) "
        "WHERE pgt_id IN (SELECT f.pgt_id FROM pgtrickle.pgt_frontiers f WHERE f.source_id "
        "OPERATOR(pg_catalog.=) $1)",
        {int8_param(source_id), text_param(why)});
    catalog::exec_as_owner(
        spi, "DELETE FROM pgtrickle.pgt_frontiers WHERE source_id OPERATOR(pg_catalog.=) $1",
        {int8_param(source_id)});
    release_capture_if_unused(spi, source_id);
}

void release_capture_if_unused(Spi& spi, int64_t source_id) {
    SpiRows r = spi.query(
        "SELECT s.source_relid::pg_catalog.oid, s.buffer_name FROM " + kSources +
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
    // Only the triggers we made: a trigger of the same name calling
    // anything else is the table owner's.
    SpiRows ours = spi.query(
        "SELECT pg_catalog.quote_ident(t.tgname) FROM pg_catalog.pg_trigger t WHERE t.tgrelid "
        "OPERATOR(pg_catalog.=) $1 AND t.tgname OPERATOR(pg_catalog.=) ANY ($2::pg_catalog.name[]) "
        "AND t.tgfoid OPERATOR(pg_catalog.=) ANY "
        "(ARRAY['pgtrickle._capture_row'::pg_catalog.regproc, "
        "'pgtrickle._capture_truncate'::pg_catalog.regproc]::pg_catalog.oid[])",
        {oid_param(relid), text_param("{pgt_capture_" + std::to_string(source_id) +
                                      ",pgt_capture_" + std::to_string(source_id) + "_truncate}")});
    for (const auto& row : ours.rows) {
        catalog::exec_as_owner(spi,
                               "DROP TRIGGER " + *row.at(0) + " ON " + quoted_relation_name(relid));
    }
    catalog::exec_as_owner(spi, "SELECT pgtrickle._drop_partition_captures($1, $2)",
                           {int8_param(source_id), oid_param(relid)});
    catalog::exec_as_owner(spi, "DROP TABLE IF EXISTS " + *r.rows[0][1]);
}

std::vector<CaptureSource> captured_sources_of(Spi& spi, int64_t pgt_id) {
    SpiRows r = spi.query(
        "SELECT s.source_id, s.source_relid::pg_catalog.oid, s.buffer_name, "
        "pg_catalog.to_regclass(s.buffer_name)::pg_catalog.oid FROM " +
            kSources +
            " s JOIN pgtrickle.pgt_frontiers f USING (source_id)"
            " WHERE f.pgt_id OPERATOR(pg_catalog.=) $1 ORDER BY s.source_id",
        {int8_param(pgt_id)});
    std::vector<CaptureSource> out;
    for (const auto& row : r.rows) {
        out.push_back({std::stoll(*row[0]), static_cast<Oid>(std::stoul(*row[1])), *row[2],
                       row[3] ? static_cast<Oid>(std::stoul(*row[3])) : InvalidOid});
    }
    return out;
}

}  // namespace pgt::pg
