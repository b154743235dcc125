// Change-notification payloads: the compact JSON that the row trigger sends
// with NOTIFY (table, op, seq, key, old_key, changed column names).
// Invariant: every payload produced here is valid JSON (given valid UTF-8 and
// valid key JSON from the caller) and strictly shorter than the limit passed.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pgt::notify {

// NOTIFY rejects payloads of this many bytes or more (NOTIFY_PAYLOAD_MAX_LENGTH).
inline constexpr std::size_t kPayloadLimit = 8000;

// kResync: not a row event; every row of the table may have changed (its
// query replaced, a reinitialisation, a restore, a drop): listeners read it
// all again. It carries a reason and no key.
enum class Op : std::uint8_t { kInsert, kUpdate, kDelete, kResync };

// "INSERT", "UPDATE", "DELETE" or "RESYNC"; throws pgt::Error XX000 for any
// other value.
std::string_view op_name(Op op);

// One row event. All views must stay valid during the build call.
struct ChangeEvent {
    std::string_view schema;  // empty: unqualified table name
    std::string_view table;
    bool names_quoted = false;  // schema/table already quoted as SQL identifiers: used verbatim
    Op op = Op::kInsert;
    std::uint64_t seq = 0;  // per-backend counter, makes equal events distinct
    // Key column names (raw, unquoted) in trigger-argument order.
    std::vector<std::string_view> key_names;
    // Key values in the same order, each already rendered as JSON
    // text (e.g. by to_json); std::nullopt renders as null.
    std::vector<std::optional<std::string_view>> key_json;
    // Old row's key (same arity as key_json); used only when op is UPDATE and
    // key_changed is set.
    std::vector<std::optional<std::string_view>> old_key_json;
    bool key_changed = false;
    // UPDATE only: names of the changed columns (raw, unquoted; JSON-escaped).
    std::vector<std::string_view> changed_columns;
    // table, op and seq only (pg_trickle.notify_payload = 'minimal'): any
    // role may LISTEN on any channel, so no key value and no column name.
    bool minimal = false;
    // RESYNC only: why (JSON-escaped; dropped when the payload is too long).
    std::string_view reason;
};

// Full payload, truncated (columns, then key/old_key dropped, with
// "truncated":true) until it is < limit bytes. Throws pgt::Error 54000 only
// when even {"table","op","seq","truncated"} does not fit (never for real
// identifiers and the default limit); XX000 for an inconsistent event.
std::string build_payload(const ChangeEvent& ev, std::size_t limit = kPayloadLimit);

// Same, appended to out (reuse one buffer across rows). The appended part is
// < limit bytes; on an exception out is restored to its previous size.
void append_payload(std::string& out, const ChangeEvent& ev, std::size_t limit = kPayloadLimit);

}  // namespace pgt::notify
