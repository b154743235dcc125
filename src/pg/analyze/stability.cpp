// Finds what makes a query's value change without a source change (see
// the header). Invariant: the walker never throws; it records the first
// construct found and stops.
#include "pg/analyze/stability.hpp"

#include <string>

#include "core/policy/stable_functions.hpp"
#include "pg/boundary/boundary.hpp"

extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

namespace pgt::pg {

namespace {

struct Scan {
    std::string found;
    List* args = NIL;  // the expressions the node being judged renders
};

// "date_trunc(text,timestamp with time zone)", as regprocedure prints a
// pg_catalog function under a search_path of pg_catalog.
std::string signature(Oid func) {
    HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(func));
    if (!HeapTupleIsValid(tup)) {
        return "";
    }
    const auto* p = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup));
    std::string out = std::string(quote_identifier(NameStr(p->proname))) + "(";
    for (int i = 0; i < p->pronargs; i++) {
        out += (i > 0 ? "," : "") + std::string(format_type_be(p->proargtypes.values[i]));
    }
    ReleaseSysCache(tup);
    return out + ")";
}

policy::StableUse stable_use_of(Oid func) {
    if (get_func_namespace(func) != PG_CATALOG_NAMESPACE) {
        return policy::StableUse::kUnknown;
    }
    return policy::stable_use(signature(func));
}

bool output_settled(Oid type, int depth);

// A value of `type` renders as text the same way whenever the pinned
// settings are the same: its output function (and those of its elements,
// fields, range bounds) is IMMUTABLE or settings-only. An enum's labels
// are read from the catalog; renaming one reinitialises its readers.
bool type_settled(Oid type, int depth) {
    if (depth > 8 || !OidIsValid(type) || type == RECORDOID) {
        return false;
    }
    type = getBaseType(type);
    switch (get_typtype(type)) {
        case TYPTYPE_ENUM:
            return true;
        case TYPTYPE_RANGE:
            return type_settled(get_range_subtype(type), depth + 1);
        case TYPTYPE_MULTIRANGE:
            return type_settled(get_multirange_range(type), depth + 1);
        case TYPTYPE_COMPOSITE: {
            TupleDesc desc = lookup_rowtype_tupdesc(type, -1);
            bool ok = true;
            for (int i = 0; ok && i < desc->natts; i++) {
                const Form_pg_attribute a = TupleDescAttr(desc, i);
                ok = a->attisdropped || type_settled(a->atttypid, depth + 1);
            }
            ReleaseTupleDesc(desc);
            return ok;
        }
        default:
            break;
    }
    const Oid element = get_element_type(type);
    if (OidIsValid(element)) {
        return type_settled(element, depth + 1);
    }
    return output_settled(type, depth);
}

bool output_settled(Oid type, int depth) {
    Oid out = InvalidOid;
    bool varlena = false;
    getTypeOutputInfo(type, &out, &varlena);
    const char v = func_volatile(out);
    (void)depth;
    return v == PROVOLATILE_IMMUTABLE ||
           (v == PROVOLATILE_STABLE && stable_use_of(out) == policy::StableUse::kSettingsOnly);
}

bool args_settled(List* args) {
    ListCell* lc;
    foreach (lc, args) {
        Node* arg = static_cast<Node*>(lfirst(lc));
        if (IsA(arg, TargetEntry)) {
            arg = reinterpret_cast<Node*>(castNode(TargetEntry, arg)->expr);
        }
        if (!type_settled(exprType(arg), 0)) {
            return false;
        }
    }
    return true;
}

bool judge(Oid func, void* ctx) {
    auto* s = static_cast<Scan*>(ctx);
    const char v = func_volatile(func);
    if (v == PROVOLATILE_IMMUTABLE) {
        return false;
    }
    if (v == PROVOLATILE_STABLE) {
        switch (stable_use_of(func)) {
            case policy::StableUse::kSettingsOnly:
                return false;
            case policy::StableUse::kArgumentOutputs:
                if (args_settled(s->args)) {
                    return false;
                }
                break;
            case policy::StableUse::kUnknown:
                break;
        }
    }
    s->found =
        std::string(v == PROVOLATILE_VOLATILE ? "the volatile function " : "the STABLE function ") +
        get_func_name(func) + "()";
    return true;
}

const char* value_function_name(SQLValueFunctionOp op) {
    switch (op) {
        case SVFOP_CURRENT_DATE:
            return "CURRENT_DATE";
        case SVFOP_CURRENT_TIME:
        case SVFOP_CURRENT_TIME_N:
            return "CURRENT_TIME";
        case SVFOP_CURRENT_TIMESTAMP:
        case SVFOP_CURRENT_TIMESTAMP_N:
            return "CURRENT_TIMESTAMP";
        case SVFOP_LOCALTIME:
        case SVFOP_LOCALTIME_N:
            return "LOCALTIME";
        case SVFOP_LOCALTIMESTAMP:
        case SVFOP_LOCALTIMESTAMP_N:
            return "LOCALTIMESTAMP";
        case SVFOP_CURRENT_ROLE:
            return "CURRENT_ROLE";
        case SVFOP_CURRENT_USER:
            return "CURRENT_USER";
        case SVFOP_USER:
            return "USER";
        case SVFOP_SESSION_USER:
            return "SESSION_USER";
        case SVFOP_CURRENT_CATALOG:
            return "CURRENT_CATALOG";
        case SVFOP_CURRENT_SCHEMA:
            return "CURRENT_SCHEMA";
    }
    return "a SQL value function";
}

bool walker(Node* node, void* ctx) {
    auto* s = static_cast<Scan*>(ctx);
    if (node == nullptr) {
        return false;
    }
    if (IsA(node, Query)) {
        return query_tree_walker(castNode(Query, node),
                                 reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)),
                                 ctx, 0);
    }
    if (IsA(node, SQLValueFunction)) {
        s->found = value_function_name(castNode(SQLValueFunction, node)->op);
        return true;
    }
    if (IsA(node, NextValueExpr)) {
        s->found = "nextval()";
        return true;
    }
    s->args = IsA(node, FuncExpr)      ? castNode(FuncExpr, node)->args
              : IsA(node, Aggref)      ? castNode(Aggref, node)->args
              : IsA(node, CoerceViaIO) ? list_make1(castNode(CoerceViaIO, node)->arg)
                                       : NIL;
    if (check_functions_in_node(node, judge, ctx)) {
        return true;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(walker)), ctx);
}

}  // namespace

std::string unstable_construct(Query* q) {
    Scan s;
    pg_call([&] {
        // Views expanded: a view's body is computed as part of the query.
        List* rewritten = QueryRewrite(static_cast<Query*>(copyObjectImpl(q)));
        ListCell* lc;
        foreach (lc, rewritten) {
            if (walker(static_cast<Node*>(lfirst(lc)), &s)) {
                break;
            }
        }
    });
    return s.found;
}

}  // namespace pgt::pg
