// Frontier storage, window parameters and buffer trimming.
// Invariant: the consumed-row test in trim_buffer() is the complement of
// the window rule: visible in the frontier snapshot, or an own row the
// frontier records as applied.
#include "pg/cdc/frontier.hpp"

#include "core/error.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/catalog/catalog.hpp"

extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
}

namespace pgt::pg {

namespace {
const char* kFrontiers = "pgtrickle.pgt_frontiers";
}

const char* const kCaptureSequenceNow =
    "COALESCE(pg_catalog.pg_sequence_last_value(pg_catalog.pg_get_serial_sequence($1, "
    "'seq')::pg_catalog.regclass), 0)";

int64_t captured_since(Spi& spi, const CaptureSource& src, const Frontier& f) {
    SpiRows r = catalog::query_as_owner(spi, std::string("SELECT ") + kCaptureSequenceNow,
                                        {text_param(src.buffer)});
    return std::max<int64_t>(0, std::stoll(*r.rows.at(0).at(0)) - f.seq_seen);
}

Frontier lock_frontier(Spi& spi, int64_t pgt_id, int64_t source_id) {
    SpiRows r = catalog::query_as_owner(
        spi,
        std::string("SELECT frontier::pg_catalog.text, own_xid::pg_catalog.text, own_seq, "
                    "seq_seen, write_mark, released IS NOT NULL FROM ") +
            kFrontiers +
            " WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND source_id OPERATOR(pg_catalog.=) $2"
            " FOR UPDATE",
        {int8_param(pgt_id), int8_param(source_id)});
    if (r.rows.empty()) {
        throw pgt::Error("XX000", "stream table has no frontier for one of its sources", "",
                         "Recreate the stream table.");
    }
    return {
        *r.rows[0][0], r.rows[0][1],        std::stoll(*r.rows[0][2]), std::stoll(*r.rows[0][3]),
        r.rows[0][4],  *r.rows[0][5] == "t"};
}

bool quiet(const Frontier& f, const std::optional<std::string>& now) {
    return f.write_mark && now && *f.write_mark == *now;
}

void advance_frontier(Spi& spi, int64_t pgt_id, const CaptureSource& src, const RefreshSnapshot& rs,
                      const std::optional<std::string>& write_mark) {
    std::string own_seq = "0";
    if (rs.own_xid) {
        SpiRows r = spi.query_at(rs.snapshot,
                                 "SELECT COALESCE(pg_catalog.max(b.seq), 0) FROM " + src.buffer +
                                     " b WHERE b.xid OPERATOR(pg_catalog.=) $1",
                                 {typed_param(XID8OID, rs.own_xid)});
        own_seq = *r.rows.at(0).at(0);
    }
    catalog::exec_as_owner(
        spi,
        std::string("INSERT INTO ") + kFrontiers +
            " (pgt_id, source_id, frontier, own_xid, own_seq, seq_seen, write_mark) VALUES ($2, "
            "$3, $4, $5, $6, " +
            kCaptureSequenceNow +
            ", $7) ON CONFLICT (pgt_id, source_id) DO UPDATE SET frontier = EXCLUDED.frontier,"
            " own_xid = EXCLUDED.own_xid, own_seq = EXCLUDED.own_seq, seq_seen = "
            "EXCLUDED.seq_seen, write_mark = EXCLUDED.write_mark, released = NULL",
        {text_param(src.buffer), int8_param(pgt_id), int8_param(src.source_id),
         typed_param(PG_SNAPSHOTOID, rs.text), typed_param(XID8OID, rs.own_xid),
         int8_param(std::stoll(own_seq)), typed_param(TEXTOID, write_mark)});
}

std::vector<SpiParam> window_params(const RefreshSnapshot& rs, const Frontier& f) {
    return {typed_param(PG_SNAPSHOTOID, rs.text), typed_param(PG_SNAPSHOTOID, f.snapshot),
            typed_param(XID8OID, rs.own_xid), typed_param(XID8OID, f.own_xid),
            int8_param(f.own_seq)};
}

void trim_buffer(Spi& spi, const CaptureSource& src, int64_t pgt_id, const Frontier& before) {
    // Rows this refresh consumed were not visible to `before`, so their
    // xids are >= its xmin; a frontier whose xmax is <= that xmin (and
    // without own rows) sees none of them: none can be deleted yet.
    SpiRows older = catalog::query_as_owner(
        spi,
        std::string("SELECT EXISTS (SELECT 1 FROM ") + kFrontiers +
            " f WHERE f.source_id OPERATOR(pg_catalog.=) $1 AND f.pgt_id OPERATOR(pg_catalog.<>) "
            "$2 AND f.own_xid IS NULL AND f.released IS NULL AND "
            "pg_catalog.pg_snapshot_xmax(f.frontier) "
            "OPERATOR(pg_catalog.<=) pg_catalog.pg_snapshot_xmin($3))",
        {int8_param(src.source_id), int8_param(pgt_id),
         typed_param(PG_SNAPSHOTOID, before.snapshot)});
    if (*older.rows.at(0).at(0) == "t") {
        return;
    }
    trim_consumed(spi, src.source_id, src.buffer);
}

uint64_t trim_consumed(Spi& spi, int64_t source_id, const std::string& buffer) {
    return catalog::exec_as_owner(
        spi,
        "DELETE FROM " + buffer + " b WHERE NOT EXISTS (SELECT 1 FROM " + kFrontiers +
            " f WHERE f.source_id OPERATOR(pg_catalog.=) $1 AND f.released IS NULL AND NOT "
            "(pg_catalog.pg_visible_in_snapshot(b.xid, f.frontier) OR COALESCE(b.xid "
            "OPERATOR(pg_catalog.=) f.own_xid AND b.seq OPERATOR(pg_catalog.<=) f.own_seq, "
            "false)))",
        {int8_param(source_id)});
}

void truncate_if_empty(Spi& spi, const std::string& buffer) {
    Oid relid = static_cast<Oid>(std::stoul(
        *spi.query("SELECT $1::pg_catalog.regclass::pg_catalog.oid", {text_param(buffer)})
             .rows.at(0)
             .at(0)));
    if (!pg_call([&] { return ConditionalLockRelationOid(relid, AccessExclusiveLock); })) {
        return;  // in use: its pages go at the next VACUUM
    }
    // A fresh snapshot under the lock sees every committed row.
    if (*catalog::query_as_owner(spi, "SELECT NOT EXISTS (SELECT 1 FROM " + buffer + ")")
             .rows.at(0)
             .at(0) == "t") {
        catalog::exec_as_owner(spi, "TRUNCATE " + buffer);
    }
}

std::vector<LaggingConsumer> lagging_consumers(Spi& spi, int64_t limit) {
    SpiRows r = catalog::query_as_owner(
        spi,
        std::string("SELECT l.pgt_id, l.source_id, l.behind, pg_catalog.quote_ident(st.pgt_schema) "
                    "OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) "
                    "pg_catalog.quote_ident(st.pgt_name), l.source_relid::pg_catalog.regclass::"
                    "pg_catalog.text FROM (SELECT f.pgt_id, f.source_id, s.source_relid, "
                    "COALESCE(pg_catalog.pg_sequence_last_value(pg_catalog.pg_get_serial_sequence("
                    "s.buffer_name, 'seq')::pg_catalog.regclass), 0) OPERATOR(pg_catalog.-) "
                    "f.seq_seen AS behind FROM ") +
            kFrontiers +
            " f JOIN pgtrickle.pgt_sources s ON s.source_id OPERATOR(pg_catalog.=) f.source_id "
            "WHERE f.released IS NULL AND pg_catalog.to_regclass(s.buffer_name) IS NOT NULL) l "
            "JOIN pgtrickle.pgt_stream_tables st ON st.pgt_id OPERATOR(pg_catalog.=) l.pgt_id "
            "WHERE l.behind OPERATOR(pg_catalog.>) $1 ORDER BY l.source_id, l.pgt_id",
        {int8_param(limit)});
    std::vector<LaggingConsumer> out;
    for (const auto& row : r.rows) {
        out.push_back(
            {std::stoll(*row[0]), std::stoll(*row[1]), std::stoll(*row[2]), *row[3], *row[4]});
    }
    return out;
}

bool release_consumer(Spi& spi, const LaggingConsumer& c, int64_t limit) {
    const std::string why = std::to_string(c.behind) + " rows of " + c.source +
                            " captured since its last refresh, more than "
                            "pg_trickle.max_buffer_retention (" +
                            std::to_string(limit) + ")";
    // A refresh holding the frontier moves it itself; never wait for one.
    const uint64_t n = catalog::exec_as_owner(
        spi,
        std::string("UPDATE ") + kFrontiers +
            " f SET released = $3, write_mark = NULL FROM (SELECT pgt_id, source_id FROM " +
            kFrontiers +
            " WHERE pgt_id OPERATOR(pg_catalog.=) $1 AND source_id OPERATOR(pg_catalog.=) $2 "
            "AND released IS NULL FOR UPDATE SKIP LOCKED) l WHERE f.pgt_id "
            "OPERATOR(pg_catalog.=) l.pgt_id AND f.source_id OPERATOR(pg_catalog.=) l.source_id",
        {int8_param(c.pgt_id), int8_param(c.source_id), text_param(why)});
    if (n == 0) {
        return false;
    }
    catalog::exec_as_owner(spi,
                           "UPDATE pgtrickle.pgt_stream_tables SET reinit_reason = "
                           "COALESCE(reinit_reason, $2) WHERE pgt_id OPERATOR(pg_catalog.=) $1",
                           {int8_param(c.pgt_id), text_param("dropped from the change buffer of " +
                                                             c.source + ": " + why)});
    return true;
}

void detach_frontiers(Spi& spi, int64_t pgt_id) {
    std::vector<CaptureSource> sources = captured_sources_of(spi, pgt_id);
    catalog::exec_as_owner(
        spi, std::string("DELETE FROM ") + kFrontiers + " WHERE pgt_id OPERATOR(pg_catalog.=) $1",
        {int8_param(pgt_id)});
    for (const CaptureSource& s : sources) {
        release_capture_if_unused(spi, s.source_id);
    }
}

}  // namespace pgt::pg
