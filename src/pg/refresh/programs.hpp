// The delta programs of one-table queries, made over either input a scan's
// Δ can have (ir::DeltaInput): a change buffer's frontier
// window (DIFFERENTIAL) or a statement's transition tables (IMMEDIATE).
#pragma once

#include <string>

#include "core/diff/plan.hpp"
#include "core/diff/program.hpp"
#include "core/ir/scan.hpp"
#include "pg/analyze/defining_query.hpp"
#include "pg/boundary/spi.hpp"
#include "pg/catalog/catalog.hpp"

namespace pgt::pg {

// The Δ of q's one-table level (core/diff/linear over q's operator tree)
// reading its source relid's change from delta (a buffer window; for
// IMMEDIATE the transition tables, whose FROM item the caller sets per
// event, as it depends on the columns read), with the server's facts set:
// whether the prefilter is selective enough to read images in one pass.
ir::ScanFilterProject scan_ir(Spi& spi, Oid owner, const AnalyzedQuery& q, Oid relid,
                              const ir::DeltaInput& delta);

// A plan over several tables (diff::reads_several_tables: a join region,
// a two-table join, a derived table's sources): the program its label
// names, reading each source's change from its buffer window (captured
// here) or, immediate, source position i's from its transition relations
// (diff::source_transition_tables(i)); positions are
// multi_table_sources(q, plan)'s.
diff::DeltaProgram multi_table_program(Spi& spi, catalog::StreamTableRow& st,
                                       const AnalyzedQuery& q, const diff::DeltaPlan& plan,
                                       bool immediate);
std::vector<Oid> multi_table_sources(const AnalyzedQuery& q, const diff::DeltaPlan& plan);

// A one-table plan: the program its label names, maintaining st's query q
// from scan's Δ: grouping sets, algebraic groups (their auxiliary columns
// added to storage), group rescans, or a projection.
diff::DeltaProgram one_table_program(Spi& spi, const catalog::StreamTableRow& st,
                                     const AnalyzedQuery& q, const diff::DeltaPlan& plan,
                                     const ir::ScanFilterProject& scan);

}  // namespace pgt::pg
