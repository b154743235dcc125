// Change notes for FULL stream tables (see change_notes.hpp).
#include "pg/cdc/change_notes.hpp"

#include "pg/boundary/boundary.hpp"
#include "pg/cdc/change_buffer.hpp"
#include "pg/common/quote.hpp"
#include "pg/common/relation_names.hpp"
#include "pg/scheduler/hooks.hpp"
#include "pg/security/rights.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "catalog/catalog.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/rel.h"

PGDLLEXPORT Datum pgt_note_write(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_note_write);
PGDLLEXPORT Datum pgt_note_table_written(PG_FUNCTION_ARGS);
PG_FUNCTION_INFO_V1(pgt_note_table_written);
}

namespace pgt::pg {

namespace {

// What keeps a table's own trigger from seeing every write to the rows
// the query reads, or "".
std::string table_blocker(Oid relid, Oid owner) {
    std::string why = pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        const char* out = IsCatalogRelation(rel)        ? "is a system catalog"
                          : rel->rd_rel->relispartition ? "is a partition"
                          : rel->rd_rel->relhassubclass ? "has partitions or inheritance children"
                          : rel->rd_rel->relrowsecurity ? "has row-level security"
                                                        : "";
        relation_close(rel, AccessShareLock);
        return out;
    });
    if (why.empty() && !may_capture(relid, owner)) {
        why = "cannot be given a trigger by the stream table's owner";
    }
    return why.empty() ? "" : "table " + relation_display_name(relid) + " " + why;
}

Datum note_write(FunctionCallInfo fcinfo) {
    if (!CALLED_AS_TRIGGER(fcinfo)) {
        throw pgt::Error("39P01", "pgtrickle._note_write called outside a trigger");
    }
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    if (!TRIGGER_FIRED_AFTER(td->tg_event) || TRIGGER_FIRED_FOR_ROW(td->tg_event)) {
        throw pgt::Error("39P01", "note trigger defined with the wrong timing or level", "",
                         "pg_trickle installs its note triggers itself.");
    }
    mark_source_written(RelationGetRelid(td->tg_relation));
    return PointerGetDatum(nullptr);
}

}  // namespace

std::string note_trigger_name(int64_t pgt_id) {
    return "pgt_note_" + std::to_string(pgt_id);
}

std::string change_notes_blocker(const AnalyzedQuery& q, Oid owner) {
    if (!q.deterministic) {
        return "its result can change without a write to what it reads (a function that is not "
               "IMMUTABLE, CURRENT_TIMESTAMP or the like, nextval, or TABLESAMPLE)";
    }
    for (const SourceRelation& s : q.sources) {
        if (s.relkind == RELKIND_VIEW) {
            continue;  // its tables are sources too
        }
        if (s.relkind != RELKIND_RELATION) {
            return relation_display_name(s.relid) + " is not a plain table";
        }
        std::string why = table_blocker(s.relid, owner);
        if (!why.empty()) {
            return why;
        }
    }
    return "";
}

void install_change_notes(Spi& spi, const catalog::StreamTableRow& st, const AnalyzedQuery& q) {
    drop_change_notes(spi, st.pgt_id);
    if (!change_notes_blocker(q, relation_owner(st.relid)).empty()) {
        return;
    }
    const std::string name = quote_ident(note_trigger_name(st.pgt_id));
    for (const SourceRelation& s : q.sources) {
        if (s.relkind != RELKIND_RELATION) {
            continue;
        }
        const std::string table = quoted_relation_name(s.relid);
        catalog::exec_as_owner(spi, "CREATE TRIGGER " + name +
                                        " AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON " +
                                        table +
                                        " FOR EACH STATEMENT EXECUTE FUNCTION "
                                        "pgtrickle._note_write()");
        // Writes under session_replication_role = replica are notes too.
        enable_always(spi, table, note_trigger_name(st.pgt_id));
    }
}

void drop_change_notes(Spi& spi, int64_t pgt_id) {
    SpiRows on = spi.query(
        "SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.tgname OPERATOR(pg_catalog.=) $1 "
        "AND t.tgfoid OPERATOR(pg_catalog.=) 'pgtrickle._note_write'::pg_catalog.regproc",
        {text_param(note_trigger_name(pgt_id))});
    for (const auto& row : on.rows) {
        catalog::exec_as_owner(spi,
                               "DROP TRIGGER " + quote_ident(note_trigger_name(pgt_id)) + " ON " +
                                   quoted_relation_name(static_cast<Oid>(std::stoul(*row.at(0)))));
    }
}

}  // namespace pgt::pg

Datum pgt_note_write(PG_FUNCTION_ARGS) {
    return pgt::pg::pgt_entry([&] { return pgt::pg::note_write(fcinfo); });
}

Datum pgt_note_table_written(PG_FUNCTION_ARGS) {
    const Oid relid = PG_GETARG_OID(0);
    return pgt::pg::pgt_entry([&]() -> Datum {
        pgt::pg::mark_source_written(relid);
        PG_RETURN_VOID();
    });
}
