// mallory's planted code for the security tests: operators, functions and
// aggregates with the names and argument types the extension's SQL uses,
// each recording its call (public.planted_calls) and trying to make mallory
// a superuser. Invariant: a planted object computes what pg_catalog's does,
// so only the record shows it ran.
#pragma once

#include <string>

#include "pg_conn.hpp"

namespace pgt::e2e::planted {

// public.planted_calls and public.planted_hit(what); run first.
void plant_logger(Conn& mallory);

// Comparisons for common type pairs, arithmetic, functions and aggregates,
// in schema.
void plant(Conn& mallory, const std::string& schema);

// Arithmetic operators only.
void plant_arithmetic(Conn& mallory, const std::string& schema);

// The roles alice, bob and mallory exist, with no attribute or setting
// (they are cluster-wide: a test or a successful attack may have left some).
void reset_roles(Conn& db);

// What the roles own in this database goes, and any superuser right a
// successful attack gave them.
void forget_roles(Conn& db);

bool is_superuser(Conn& db, const std::string& role);

// What the planted code recorded: "" when nothing ran.
std::string calls(Conn& db);

}  // namespace pgt::e2e::planted
