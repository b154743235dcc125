// Identity columns of stream-table storage, and the SQL that fills them.
// Invariant: every identifier in generated SQL is quoted and every function
// schema-qualified; the identity expression is built here and nowhere else.
#include "pg/refresh/storage.hpp"

#include "pg/guard/storage_guard.hpp"

#include <algorithm>

#include "core/diff/scan_delta.hpp"
#include "core/error.hpp"
#include "core/rowid/format.hpp"
#include "core/rowid/probe.hpp"
#include "pg/rowid/identity_types.hpp"
#include "pg/common/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog_schema.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "access/relation.h"
#include "utils/builtins.h"
#include "utils/rel.h"
}

namespace pgt::pg {

void add_identity_storage(Spi& spi, const std::string& quoted_table, const AnalyzedQuery& q) {
    bool unique = q.identity.domain != rowid::Domain::kKeylessRow && identity_probe_is_exact(q);
    spi.exec("ALTER TABLE " + quoted_table + " ADD COLUMN " + kRowIdColumn +
             " pg_catalog.bytea NOT NULL, ADD COLUMN " + kRowProbeColumn +
             " pg_catalog.bytea GENERATED ALWAYS AS (pgtrickle.row_probe_v1(" + kRowIdColumn +
             ")) STORED");
    spi.exec(std::string(unique ? "CREATE UNIQUE INDEX ON " : "CREATE INDEX ON ") + quoted_table +
             " (" + kRowProbeColumn + ")");
    // A replica identity, so the table can be published as it is (a
    // refresh's UPDATE and DELETE need one then). The whole row: the unique
    // probe is a generated column, which PostgreSQL 15 neither replicates nor
    // accepts as a replica identity a subscriber can use. Its old-row images
    // are logged only under wal_level = logical.
    spi.exec("ALTER TABLE " + quoted_table + " REPLICA IDENTITY FULL");
    spi.exec(guard_trigger_sql(quoted_table));
}

void replace_identity_index(Spi& spi, Oid relid, const AnalyzedQuery& q) {
    SpiRows idx = spi.query(
        "SELECT i.indexrelid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_index i "
        "JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid "
        "AND a.attnum OPERATOR(pg_catalog.=) ANY (i.indkey::pg_catalog.int2[]) "
        "WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND a.attname OPERATOR(pg_catalog.=) $2",
        {oid_param(relid), text_param(std::string(kRowProbeColumn))});
    for (const auto& row : idx.rows) {
        spi.exec("DROP INDEX " + *row.at(0));
    }
    const bool unique =
        q.identity.domain != rowid::Domain::kKeylessRow && identity_probe_is_exact(q);
    spi.exec(std::string(unique ? "CREATE UNIQUE INDEX ON " : "CREATE INDEX ON ") +
             quoted_relation_name(relid) + " (" + kRowProbeColumn + ")");
}

std::string row_id_expression(const catalog::StreamTableRow& st, const std::string& alias) {
    std::vector<std::string> fields;
    for (const std::string& col : st.identity_columns) {
        fields.push_back(alias + "." + quote_ident(col));
    }
    return diff::row_id_expression(st.identity_domain, fields);
}

ir::IdentityTarget identity_target(const catalog::StreamTableRow& st) {
    ir::IdentityTarget t;
    t.table = quoted_relation_name(st.relid);
    t.domain = st.identity_domain;
    for (const std::string& c : st.identity_columns) {
        t.columns.push_back(quote_ident(c));
    }
    t.keyed = st.identity_domain != rowid::Domain::kKeylessRow;
    return t;
}

std::vector<OutputColumn> user_columns(Oid relid) {
    std::vector<OutputColumn> cols;
    pg_call([&] {
        Relation rel = relation_open(relid, AccessShareLock);
        TupleDesc desc = RelationGetDescr(rel);
        for (int i = 0; i < desc->natts; i++) {
            Form_pg_attribute att = TupleDescAttr(desc, i);
            if (!att->attisdropped &&
                strncmp(NameStr(att->attname), pgt::catalog::kReservedColumnPrefix, 6) != 0) {
                cols.push_back(
                    {NameStr(att->attname), att->atttypid, att->atttypmod, att->attcollation});
            }
        }
        relation_close(rel, AccessShareLock);
    });
    return cols;
}

bool storage_matches(Oid relid, const std::vector<OutputColumn>& cols) {
    std::vector<OutputColumn> have = user_columns(relid);
    auto same = [](const OutputColumn& a, const OutputColumn& b) {
        return a.name == b.name && a.type == b.type && a.typmod == b.typmod &&
               a.collation == b.collation;
    };
    return std::equal(have.begin(), have.end(), cols.begin(), cols.end(), same);
}

std::string output_column_list(Oid relid) {
    std::string list;
    for (const OutputColumn& c : user_columns(relid)) {
        list += (list.empty() ? "" : ", ") + quote_ident(c.name);
    }
    return list;
}

void sync_aux_columns(Spi& spi, Oid relid,
                      const std::vector<std::pair<std::string, std::string>>& aux) {
    // name → type as format_type prints it (schema-qualified for comparison).
    SpiRows have = spi.query(
        "SELECT a.attname::pg_catalog.text, pg_catalog.format_type(a.atttypid, NULL) FROM "
        "pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum > 0 "
        "AND NOT a.attisdropped AND pg_catalog.starts_with(a.attname::pg_catalog.text, $2) AND "
        "a.attname OPERATOR(pg_catalog.<>) ALL (ARRAY[$3, $4, $5]::pg_catalog.name[])",
        {oid_param(relid), text_param(std::string(pgt::catalog::kReservedColumnPrefix)),
         text_param(std::string(kRowIdColumn)), text_param(std::string(kRowProbeColumn)),
         text_param(std::string(kGroupingSetColumn))});
    std::string table = quoted_relation_name(relid);
    std::vector<std::string> changes;
    auto plain_type = [](const std::string& t) {
        return t.rfind("pg_catalog.", 0) == 0 ? t.substr(11) : t;
    };
    auto type_name = [](const std::string& t) {
        return t == "int8" ? std::string("bigint") : t == "bool" ? std::string("boolean") : t;
    };
    for (const auto& row : have.rows) {
        bool keep = false;
        for (const auto& [name, type] : aux) {
            keep = keep || (name == *row[0] && type_name(plain_type(type)) == *row[1]);
        }
        if (!keep) {
            changes.push_back("DROP COLUMN " + quote_ident(*row[0]));
        }
    }
    for (const auto& [name, type] : aux) {
        bool present = false;
        for (const auto& row : have.rows) {
            present = present || (name == *row[0] && type_name(plain_type(type)) == *row[1]);
        }
        if (!present) {
            changes.push_back("ADD COLUMN " + quote_ident(name) + " " + type);
        }
    }
    if (!changes.empty()) {
        std::string list;
        for (const std::string& c : changes) {
            list += (list.empty() ? "" : ", ") + c;
        }
        spi.exec("ALTER TABLE " + table + " " + list);
    }
}

void check_identity_versions(const catalog::StreamTableRow& st) {
    if (st.row_identity_version == rowid::kVersion &&
        st.row_probe_version == rowid::kProbeVersion) {
        return;
    }
    throw pgt::Error(
        "55000",
        "stream table " + relation_display_name(st.relid) +
            " was written with row identity version " + std::to_string(st.row_identity_version) +
            " and probe version " + std::to_string(st.row_probe_version),
        "This library reads and writes row identity version " + std::to_string(rowid::kVersion) +
            " and probe version " + std::to_string(rowid::kProbeVersion) + ".",
        "Rebuild the stream table: drop it and create it again with the same query.");
}

}  // namespace pgt::pg
