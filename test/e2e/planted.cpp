// mallory's planted code (test/e2e/planted.hpp): operators, functions and
// aggregates named like pg_catalog's, each reporting its call.
#include "planted.hpp"

#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace pgt::e2e::planted {
namespace {

// Planted operators and functions. Only those with argument types that
// beat pg_catalog's candidates (an exact match where pg_catalog needs a
// cast, or a non-polymorphic one where pg_catalog's is polymorphic or
// variadic) are reachable with pg_catalog first in the path; the others
// shadow pg_catalog's and are reached only under a path that puts the
// schema before pg_catalog.
struct TypePair {
    const char* left;
    const char* right;
    const char* common;  // the type both are compared as
};

const TypePair kComparedPairs[] = {
    {"real", "integer", "double precision"},
    {"integer", "real", "double precision"},
    {"real", "real", "double precision"},
    {"real", "bigint", "double precision"},
    {"double precision", "integer", "double precision"},
    {"integer", "double precision", "double precision"},
    {"numeric", "integer", "numeric"},
    {"integer", "numeric", "numeric"},
    {"bigint", "numeric", "numeric"},
    {"integer", "integer", "integer"},
    {"bigint", "bigint", "bigint"},
    {"oid", "integer", "bigint"},
    {"oid", "regclass", "oid"},
    {"oid", "regnamespace", "oid"},
    {"text", "text", "text"},
};

struct Comparison {
    const char* op;
    const char* restrict_fn;  // selectivity estimator: runs the operator at plan time
};

const Comparison kComparisons[] = {
    {"=", "eqsel"},        {"<>", "neqsel"},     {"<", "scalarltsel"},
    {"<=", "scalarlesel"}, {">", "scalargtsel"}, {">=", "scalargesel"},
};

struct Arithmetic {
    const char* op;
    const char* left;
    const char* right;
    const char* result;
    const char* body;  // the value, with pg_catalog's operator
};

const Arithmetic kArithmetic[] = {
    {"*", "integer", "double precision", "double precision",
     "$1::double precision OPERATOR(pg_catalog.*) $2"},
    {"*", "double precision", "integer", "double precision",
     "$1 OPERATOR(pg_catalog.*) $2::double precision"},
    {"*", "bigint", "double precision", "double precision",
     "$1::double precision OPERATOR(pg_catalog.*) $2"},
    {"*", "real", "real", "real", "$1 OPERATOR(pg_catalog.*) $2"},
    {"-", "double precision", "integer", "double precision",
     "$1 OPERATOR(pg_catalog.-) $2::double precision"},
    {"+", "bigint", "numeric", "numeric", "$1::numeric OPERATOR(pg_catalog.+) $2"},
    {"-", "timestamp with time zone", "timestamp with time zone", "interval",
     "$1 OPERATOR(pg_catalog.-) $2"},
    {"||", "text", "text", "text", "$1 OPERATOR(pg_catalog.||) $2"},
    {"-", "timestamp with time zone", "timestamp without time zone", "interval",
     "$1 OPERATOR(pg_catalog.-) $2::timestamp with time zone"},
};

struct Function {
    const char* signature;
    const char* returns;
    const char* body;  // plpgsql statements after the planted_hit call
};

// GREATEST and COALESCE are syntax, not calls: planting them shows that
// (they can never be reached), as the brief asked for them.
const Function kFunctions[] = {
    {"date_part(text, interval)", "double precision", "RETURN pg_catalog.date_part($1, $2);"},
    {"date_part(text, timestamp with time zone)", "double precision",
     "RETURN pg_catalog.date_part($1, $2);"},
    {"date_part(character varying, interval)", "double precision",
     "RETURN pg_catalog.date_part($1::text, $2);"},
    {"greatest(real, integer)", "real",
     "RETURN CASE WHEN $1 OPERATOR(pg_catalog.>=) $2::real THEN $1 ELSE $2::real END;"},
    {"\"coalesce\"(bigint, integer)", "bigint", "RETURN COALESCE($1, $2);"},
    {"array_to_string(text[], text)", "text", "RETURN pg_catalog.array_to_string($1, $2);"},
    {"array_to_string(name[], text)", "text", "RETURN pg_catalog.array_to_string($1, $2);"},
    {"array_to_string(smallint[], text)", "text", "RETURN pg_catalog.array_to_string($1, $2);"},
    {"array_to_string(integer[], text)", "text", "RETURN pg_catalog.array_to_string($1, $2);"},
    {"unnest(text[])", "SETOF text", "RETURN QUERY SELECT pg_catalog.unnest($1);"},
    {"unnest(name[])", "SETOF name", "RETURN QUERY SELECT pg_catalog.unnest($1);"},
    {"unnest(smallint[])", "SETOF smallint", "RETURN QUERY SELECT pg_catalog.unnest($1);"},
    {"unnest(integer[])", "SETOF integer", "RETURN QUERY SELECT pg_catalog.unnest($1);"},
    {"unnest(oid[])", "SETOF oid", "RETURN QUERY SELECT pg_catalog.unnest($1);"},
    {"pg_current_snapshot()", "pg_snapshot", "RETURN pg_catalog.pg_current_snapshot();"},
    {"quote_ident(text)", "text", "RETURN pg_catalog.quote_ident($1);"},
    {"quote_ident(name)", "text", "RETURN pg_catalog.quote_ident($1::text);"},
    {"quote_literal(name)", "text", "RETURN pg_catalog.quote_literal($1::text);"},
    {"format(text, text)", "text", "RETURN pg_catalog.format($1, $2);"},
    {"format(text, name)", "text", "RETURN pg_catalog.format($1, $2);"},
    {"format(text, regclass)", "text", "RETURN pg_catalog.format($1, $2);"},
    {"format(text, text, text)", "text", "RETURN pg_catalog.format($1, $2, $3);"},
    {"concat(text, text)", "text", "RETURN pg_catalog.concat($1, $2);"},
    {"nextval(text)", "bigint", "RETURN pg_catalog.nextval($1::regclass);"},
    {"to_regclass(name)", "regclass", "RETURN pg_catalog.to_regclass($1::text);"},
    {"pg_notify(name, text)", "void", "PERFORM pg_catalog.pg_notify($1::text, $2);"},
    {"json_build_object(text, text)", "json", "RETURN pg_catalog.json_build_object($1, $2);"},
    {"jsonb_build_object(text, text)", "jsonb", "RETURN pg_catalog.jsonb_build_object($1, $2);"},
    {"to_json(text)", "json", "RETURN pg_catalog.to_json($1);"},
};

struct Aggregate {
    const char* name;
    const char* args;      // the aggregate's arguments
    const char* stype;     // its state type
    const char* initcond;  // nullptr: none
    const char* step;      // plpgsql RETURN of the new state
};

const Aggregate kAggregates[] = {
    {"count", "integer", "bigint", "0",
     "RETURN $1 OPERATOR(pg_catalog.+) (CASE WHEN $2 IS NULL THEN 0 ELSE 1 END)::bigint;"},
    {"count", "bigint", "bigint", "0",
     "RETURN $1 OPERATOR(pg_catalog.+) (CASE WHEN $2 IS NULL THEN 0 ELSE 1 END)::bigint;"},
    {"count", "text", "bigint", "0",
     "RETURN $1 OPERATOR(pg_catalog.+) (CASE WHEN $2 IS NULL THEN 0 ELSE 1 END)::bigint;"},
    {"count", "name", "bigint", "0",
     "RETURN $1 OPERATOR(pg_catalog.+) (CASE WHEN $2 IS NULL THEN 0 ELSE 1 END)::bigint;"},
    {"sum", "real", "double precision", nullptr,
     "RETURN COALESCE($1, 0::double precision) OPERATOR(pg_catalog.+) $2::double precision;"},
    {"string_agg", "name, text", "text", nullptr, "RETURN pg_catalog.concat($1, $3, $2::text);"},
    {"array_agg", "integer", "integer[]", "{}", "RETURN pg_catalog.array_append($1, $2);"},
    {"array_agg", "smallint", "smallint[]", "{}", "RETURN pg_catalog.array_append($1, $2);"},
    {"array_agg", "text", "text[]", "{}", "RETURN pg_catalog.array_append($1, $2);"},
    {"array_agg", "oid", "oid[]", "{}", "RETURN pg_catalog.array_append($1, $2);"},
};

std::string quoted_literal(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c == '\'' ? std::string("''") : std::string(1, c);
    }
    return out + "'";
}

// A plpgsql function that reports its call, then runs `body`.
std::string planted_function(const std::string& qualified_signature, const std::string& returns,
                             const std::string& label, const std::string& body) {
    return "CREATE FUNCTION " + qualified_signature + " RETURNS " + returns +
           " LANGUAGE plpgsql AS $f$ BEGIN PERFORM public.planted_hit(" + quoted_literal(label) +
           "); " + body + " END $f$";
}

// Arithmetic operators only (AUTO's cost reading multiplies a constant by
// date_part's double precision).
}  // namespace

void plant_arithmetic(Conn& mallory, const std::string& schema) {
    std::string sql;
    int n = 0;
    for (const Arithmetic& a : kArithmetic) {
        std::string fn = schema + ".planted_arith_" + std::to_string(n++);
        std::string label = schema + "." + a.op + "(" + a.left + ", " + a.right + ")";
        sql += planted_function(fn + "(" + a.left + ", " + a.right + ")", a.result, label,
                                std::string("RETURN ") + a.body + ";") +
               ";\n";
        sql += std::string("CREATE OPERATOR ") + schema + "." + a.op + " (LEFTARG = " + a.left +
               ", RIGHTARG = " + a.right + ", FUNCTION = " + fn + ");\n";
    }
    mallory.exec(sql);
}

// Everything: comparisons for common type pairs, arithmetic, functions and
// aggregates with the names the extension's SQL uses.
void plant(Conn& mallory, const std::string& schema) {
    std::string sql;
    int n = 0;
    for (const Comparison& c : kComparisons) {
        for (const TypePair& t : kComparedPairs) {
            std::string fn = schema + ".planted_cmp_" + std::to_string(n++);
            std::string label = schema + "." + c.op + "(" + t.left + ", " + t.right + ")";
            sql +=
                planted_function(fn + "(" + t.left + ", " + t.right + ")", "boolean", label,
                                 std::string("RETURN $1::") + t.common + " OPERATOR(pg_catalog." +
                                     c.op + ") $2::" + t.common + ";") +
                ";\n";
            sql += "CREATE OPERATOR " + schema + "." + c.op + " (LEFTARG = " + t.left +
                   ", RIGHTARG = " + t.right + ", FUNCTION = " + fn +
                   ", RESTRICT = " + c.restrict_fn + ");\n";
        }
    }
    for (const Function& f : kFunctions) {
        sql += planted_function(schema + "." + f.signature, f.returns, schema + "." + f.signature,
                                f.body) +
               ";\n";
    }
    for (const Aggregate& a : kAggregates) {
        std::string sf = schema + ".planted_step_" + std::to_string(n++);
        std::string label = schema + "." + a.name + "(" + a.args + ")";
        sql += planted_function(sf + "(" + a.stype + ", " + a.args + ")", a.stype, label, a.step) +
               ";\n";
        sql += std::string("CREATE AGGREGATE ") + schema + "." + a.name + "(" + a.args +
               ") (SFUNC = " + sf + ", STYPE = " + a.stype +
               (a.initcond ? std::string(", INITCOND = ") + quoted_literal(a.initcond) : "") +
               ");\n";
    }
    mallory.exec(sql);
    plant_arithmetic(mallory, schema);
}

// mallory's trap: public.planted_calls (anyone may insert) and
// public.planted_hit(what), which every planted function calls. It
// records the call, warns, and tries to make mallory a superuser (which
// works exactly when the code runs with a superuser's rights).
void plant_logger(Conn& mallory) {
    mallory.exec(R"sql(
CREATE TABLE public.planted_calls (what text, by_role text);
GRANT INSERT ON public.planted_calls TO PUBLIC;
CREATE FUNCTION public.planted_hit(what text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  BEGIN
INSERT INTO public.planted_calls VALUES (what, current_user);
  EXCEPTION WHEN OTHERS THEN
RAISE WARNING 'planted % reached (not logged: %)', what, SQLERRM;
  END;
  RAISE WARNING 'planted % reached as %', what, current_user;
  BEGIN
ALTER ROLE mallory SUPERUSER;
  EXCEPTION WHEN OTHERS THEN
NULL;
  END;
END $f$)sql");
}

void reset_roles(Conn& db) {
    db.exec(R"sql(
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['alice', 'bob', 'mallory'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I', r);
    END IF;
    EXECUTE pg_catalog.format('ALTER ROLE %I NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS', r);
    EXECUTE pg_catalog.format('ALTER ROLE %I RESET ALL', r);
  END LOOP;
END $$)sql");
}

void forget_roles(Conn& db) {
    try {
        db.exec("ROLLBACK");
        db.exec("RESET ROLE; RESET ALL");
        db.exec("DROP OWNED BY alice, bob, mallory");
        db.exec(
            "ALTER ROLE alice NOSUPERUSER; ALTER ROLE bob NOSUPERUSER;"
            "ALTER ROLE mallory NOSUPERUSER");
    } catch (const std::exception& e) {
        ADD_FAILURE() << "cleaning up the roles failed: " << e.what();
    }
}

bool is_superuser(Conn& db, const std::string& role) {
    return db.scalar("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", {role}) == "t";
}

std::string calls(Conn& db) {
    return db.scalar(
        "SELECT coalesce(pg_catalog.string_agg(what || ' as ' || by_role, '; '), '') FROM "
        "public.planted_calls");
}

}  // namespace pgt::e2e::planted
