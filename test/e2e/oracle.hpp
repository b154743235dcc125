// The oracle: a stream table must equal its defining query run from
// scratch, as a multiset of rows.
// Invariant: comparison is on the user-visible columns only (never
// __pgt_*), in both EXCEPT ALL directions, and a failure prints the rows.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pg_conn.hpp"

namespace pgt::e2e {

// Success, or a failure listing rows extra in the stream table and rows
// missing from it.
::testing::AssertionResult matches_query(Conn& conn, const std::string& st_name);

}  // namespace pgt::e2e

#define EXPECT_MATCHES_QUERY(conn, st) EXPECT_TRUE(::pgt::e2e::matches_query((conn), (st)))
#define ASSERT_MATCHES_QUERY(conn, st) ASSERT_TRUE(::pgt::e2e::matches_query((conn), (st)))
