// SPI through the call guard: every statement our C++ code runs goes here.
// Invariant: every SPI call is made under pg_call() and its return code is
// checked; results are copied into C++ values before the next statement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "postgres.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"
}

namespace pgt::pg {

// One typed parameter of a statement ($1, $2, ...).
struct SpiParam {
    Oid type;
    Datum value;
    bool isnull = false;
};

SpiParam text_param(const std::string& s);
SpiParam text_param(const std::optional<std::string>& s);
SpiParam oid_param(Oid v);
SpiParam int8_param(int64_t v);
SpiParam bool_param(bool v);
// A parameter of any type from its text form (NULL when nullopt), through
// the type's input function.
SpiParam typed_param(Oid type, const std::optional<std::string>& text);

// Rows of one result, every value as text (NULL as nullopt).
struct SpiRows {
    uint64_t processed = 0;
    std::vector<std::vector<std::optional<std::string>>> rows;
};

// An SPI connection of the current call. close() is explicit: no
// PostgreSQL call happens in the destructor (an error path leaves the
// connection to transaction abort, which cleans it up).
// While one lives, every statement run through Spi is read-only: SPI
// then takes no new command id (a statement that may write increments the
// command counter first), so code running inside a statement's BEFORE
// triggers leaves the command id its later triggers see unchanged.
class SpiReadOnlyScope {
public:
    SpiReadOnlyScope();
    ~SpiReadOnlyScope();
    SpiReadOnlyScope(const SpiReadOnlyScope&) = delete;
    SpiReadOnlyScope& operator=(const SpiReadOnlyScope&) = delete;
};

class Spi {
public:
    static Spi connect();
    void close();

    // Every statement this process runs through Spi from now on begins
    // with tag (sql::statement_tag), unless its text begins with a comment
    // already. For the scheduler worker, whose statements pg_stat_statements
    // tracks as top-level ones.
    static void tag_process_statements(const std::string& tag);

    // Runs sql; returns the number of rows processed.
    uint64_t exec(const std::string& sql, const std::vector<SpiParam>& params = {},
                  bool read_only = false);
    // Runs sql and returns its rows as text.
    SpiRows query(const std::string& sql, const std::vector<SpiParam>& params = {},
                  bool read_only = false);
    // First column of the first row, if any.
    std::optional<std::string> scalar(const std::string& sql,
                                      const std::vector<SpiParam>& params = {});

    // Runs sql with the given snapshot (every statement of a refresh uses
    // the same one) and returns its rows as text. sized_plan: sql reads the
    // registered relations, and its kept plan is chosen by their sizes.
    SpiRows query_at(Snapshot snapshot, const std::string& sql,
                     const std::vector<SpiParam>& params = {}, bool sized_plan = false);

    // Runs sql at snapshot and keeps its rows as ephemeral named relations
    // (what transition tables are): the first column, a bool, sends a row
    // to old_name (true) or new_name (false) and is dropped; delta_name gets
    // every row with an int8 column __pgt_sign after the others (-1 for a
    // row of old_name, +1 for one of new_name). An empty name: that relation
    // is not kept. Statements that follow on this connection read them by
    // name, with their exact row counts known to the planner, until
    // unregister_relations(). Returns the old and new row counts.
    std::pair<uint64_t, uint64_t> register_images(Snapshot snapshot, const std::string& sql,
                                                  const std::vector<SpiParam>& params,
                                                  const std::string& old_name,
                                                  const std::string& new_name,
                                                  const std::string& delta_name = "");
    void unregister_relations();

    // Runs sql (no parameters) once at snapshot, planned for that run so
    // that PostgreSQL may choose a parallel plan, and keeps its rows as the
    // ephemeral named relation `name` (as register_images does); returns
    // their count.
    uint64_t register_rows(Snapshot snapshot, const std::string& sql, const std::string& name);

    // Registers rows (nullptr: none) with descriptor desc under name on
    // this connection, in place, as a transition table is registered.
    void register_tuplestore(const std::string& name, TupleDesc desc, Tuplestorestate* store);
    // Runs sql (no parameters) through a plan kept for the backend's life
    // (PostgreSQL revalidates it after DDL), reading what is registered on
    // this connection, under snapshot (nullptr: the current one); returns
    // its rows as text.
    SpiRows query_kept(const std::string& sql, Snapshot snapshot = nullptr);
    // After an error: the names go, the tuplestores are left to the
    // (sub)transaction abort that owns their files.
    void forget_relations();
    // The rows the planner estimates sql (no parameters) returns: its
    // generic plan's top node, planned under the pinned search_path and
    // never run (what EXPLAIN prints as "rows").
    double planned_rows(const std::string& sql);

private:
    Spi() = default;
    int run(const std::string& sql, const std::vector<SpiParam>& params, bool read_only,
            Snapshot snapshot = nullptr, bool sized_plan = false);
    int run_unpinned(const std::string& sql, const std::vector<SpiParam>& params, bool read_only,
                     Snapshot snapshot = nullptr, bool sized_plan = false);
    SpiRows collect();
    bool open_ = false;
    std::vector<std::pair<std::string, double>> registered_;  // name, rows
    // Registered in place (register_tuplestore: transition tables):
    // "name/row type", rows; they also choose a sized plan, and live as
    // long as the connection.
    std::vector<std::pair<std::string, double>> in_place_;
    std::vector<Tuplestorestate*> stores_;
};

}  // namespace pgt::pg
