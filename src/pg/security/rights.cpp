// Privilege checks of stream tables (see rights.hpp).
#include "pg/security/rights.hpp"

#include "pg/common/quote.hpp"
#include "pg/boundary/boundary.hpp"
#include "pg/common/relation_names.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
}

namespace pgt::pg {

namespace {

// The first column of r that role may not read: 0 for a whole-row
// reference, -1 when role may read everything r reads. A reference that
// reads no column (count(*)) needs SELECT on some column.
int denied_column(const ReadRight& r, Oid role) {
    return pg_call([&] {
        if (pg_class_aclcheck(r.relid, role, ACL_SELECT) == ACLCHECK_OK) {
            return -1;
        }
        if (r.attnums.empty()) {
            return pg_attribute_aclcheck_all(r.relid, role, ACL_SELECT, ACLMASK_ANY) == ACLCHECK_OK
                       ? -1
                       : 0;
        }
        for (int a : r.attnums) {
            bool ok = a == 0 ? pg_attribute_aclcheck_all(r.relid, role, ACL_SELECT, ACLMASK_ALL) ==
                                   ACLCHECK_OK
                             : pg_attribute_aclcheck(r.relid, static_cast<AttrNumber>(a), role,
                                                     ACL_SELECT) == ACLCHECK_OK;
            if (!ok) {
                return a;
            }
        }
        return -1;
    });
}

std::string role_name(Oid role) {
    return pg_call([&] { return GetUserNameFromId(role, false); });
}

Oid reader_of(const ReadRight& r, Oid owner) {
    return OidIsValid(r.check_as) ? r.check_as : owner;
}

}  // namespace

void check_read_rights(const std::vector<ReadRight>& reads, Oid owner) {
    for (const ReadRight& r : reads) {
        const Oid role = reader_of(r, owner);
        const int col = denied_column(r, role);
        if (col < 0) {
            continue;
        }
        const std::string table = relation_display_name(r.relid);
        const std::string who = role_name(role);
        if (col == 0) {
            throw pgt::Error("42501", "permission denied for table " + table,
                             "Role " + who + " needs SELECT on " + table +
                                 " (all of its columns) to read it in a stream table query.",
                             "GRANT SELECT ON " + quoted_relation_name(r.relid) + " TO " +
                                 quote_ident(who) + ";");
        }
        char* name =
            pg_call([&] { return get_attname(r.relid, static_cast<AttrNumber>(col), false); });
        throw pgt::Error(
            "42501", "permission denied for column " + std::string(name) + " of table " + table,
            "Role " + who + " needs SELECT on every column a stream table query reads.",
            "GRANT SELECT (" + quote_ident(name) + ") ON " + quoted_relation_name(r.relid) +
                " TO " + quote_ident(who) + ";");
    }
}

std::string row_security_blocker(const std::vector<ReadRight>& reads, Oid owner) {
    for (const ReadRight& r : reads) {
        const Oid role = reader_of(r, owner);
        int rls = pg_call([&] { return check_enable_rls(r.relid, role, true); });
        if (rls == RLS_ENABLED) {
            return "table " + relation_display_name(r.relid) +
                   ", whose row-level security policies apply to role " + role_name(role);
        }
    }
    return "";
}

bool may_capture(Oid relid, Oid role) {
    return pg_call([&] {
        return pg_class_ownercheck(relid, role) ||
               pg_class_aclcheck(relid, role, ACL_TRIGGER) == ACLCHECK_OK;
    });
}

void check_capture_right(Oid relid) {
    const Oid role = GetUserId();
    if (may_capture(relid, role)) {
        return;
    }
    const std::string table = relation_display_name(relid);
    throw pgt::Error(
        "42501", "permission denied to capture changes of table " + table,
        "DIFFERENTIAL maintenance puts a capture trigger on " + table + " (or adds columns to " +
            "it), which needs the table's owner, the TRIGGER privilege on it, or a superuser.",
        "Ask the table's owner to GRANT TRIGGER ON " + quoted_relation_name(relid) + " TO " +
            quote_ident(role_name(role)) + ", or use refresh_mode => 'FULL'.");
}

}  // namespace pgt::pg
