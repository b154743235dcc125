// What a stream table's owner may read and what a role may capture: the
// checks that make a stream table give its owner exactly what a
// materialized view with the same query would (docs/security.md).
// Invariant: every check is made for the role the refresh will run as (the
// owner, or a view's owner for the view's own references), never for the
// extension's owner, and before anything is created.
#pragma once

#include <string>
#include <vector>

#include "pg/analyze/defining_query.hpp"

extern "C" {
#include "postgres.h"
}

namespace pgt::pg {

// 42501 naming the first relation and column in `reads` that `owner` (for
// references checked as the owner) or the view's owner may not SELECT.
void check_read_rights(const std::vector<ReadRight>& reads, Oid owner);

// "" or what keeps a DIFFERENTIAL refresh from maintaining a query over
// these references: a relation whose row-level security policies apply to
// the role reading it (a change buffer row carries no policy; only FULL,
// which reads the table as that role, sees what the role may see).
std::string row_security_blocker(const std::vector<ReadRight>& reads, Oid owner);

// Whether `role` may install capture (a trigger) on relid: its owner, a
// holder of the TRIGGER privilege, or a superuser. Installing capture
// locks the table; a role that could not create a trigger on it itself
// must not be able to make the extension do it.
bool may_capture(Oid relid, Oid role);

// 42501 unless may_capture(relid, GetUserId()).
void check_capture_right(Oid relid);

}  // namespace pgt::pg
