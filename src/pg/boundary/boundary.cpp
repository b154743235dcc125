// Implementation of the error bridges declared in boundary.hpp.
// Invariant: nothing here allocates with new/std::string while a
// PostgreSQL error can still longjmp past it; raise_pending() is the only
// place that turns a saved C++ exception into ereport.
#include "pg/boundary/boundary.hpp"

#include <cstring>
#include <new>
#include <string_view>

extern "C" {
#include "postgres.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

namespace pgt::pg {

namespace {

std::string unpack_sqlstate(int code) {
    return std::string(unpack_sql_state(code));
}

const char* str_or_empty(const char* s) {
    return s != nullptr ? s : "";
}

// Copies s into the current memory context without raising on OOM.
const char* copy_no_oom(const char* s, const char* fallback) {
    if (s == nullptr) {
        return nullptr;
    }
    size_t len = std::strlen(s) + 1;
    char* copy = static_cast<char*>(palloc_extended(len, MCXT_ALLOC_NO_OOM));
    if (copy == nullptr) {
        return fallback;
    }
    std::memcpy(copy, s, len);
    return copy;
}

const char* copy_optional(const std::string& s) {
    return s.empty() ? nullptr : copy_no_oom(s.c_str(), nullptr);
}

// Text of a statement the extension generated: it names our hidden
// columns or schemas, which no user query does, or begins with our tag
// (sql::statement_tag).
bool names_ours(const char* s, size_t len) {
    const std::string_view text(s, len);
    return text.find("__pgt_") != std::string_view::npos ||
           text.find("pgtrickle") != std::string_view::npos ||
           text.find("/* pg_trickle: ") != std::string_view::npos;
}

// Whether a context entry starts at s (one PostgreSQL's own callbacks or a
// procedural language would write): where a quoted statement before it ends.
bool starts_entry(const char* s) {
    static const char* const kStarts[] = {"SQL statement \"", "SQL function ", "PL/pgSQL ",
                                          "SQL expression ",  "COPY ",         "while ",
                                          "parallel worker",  "JSON data",     "PL/"};
    for (const char* p : kStarts) {
        if (std::strncmp(s, p, std::strlen(p)) == 0) {
            return true;
        }
    }
    return false;
}

// The error context without the entries quoting a statement we generated
// ("SQL statement \"WITH __pgt_...\"", often kilobytes over many lines):
// they tell a user nothing and may quote values. Other entries (a user
// function's) stay. A quoted statement ends at a quote closing the text or
// followed by a line that starts another entry.
char* without_internal_statements(const char* context) {
    if (context == nullptr) {
        return nullptr;
    }
    const size_t len = std::strlen(context);
    char* out = static_cast<char*>(palloc_extended(len + 1, MCXT_ALLOC_NO_OOM));
    if (out == nullptr) {
        return nullptr;
    }
    size_t n = 0;
    for (size_t start = 0; start < len;) {
        const char* line = context + start;
        size_t end = len;  // one past the entry
        if (std::strncmp(line, "SQL statement \"", 15) == 0) {
            for (size_t i = start + 15; i < len; i++) {
                if (context[i] == '"' && i + 1 < len && context[i + 1] == '\n' &&
                    starts_entry(context + i + 2)) {
                    end = i + 1;
                    break;
                }
            }
        } else {
            const char* nl = static_cast<const char*>(std::memchr(line, '\n', len - start));
            end = nl != nullptr ? static_cast<size_t>(nl - context) : len;
        }
        const bool ours =
            std::strncmp(line, "SQL statement \"", 15) == 0 && names_ours(line, end - start);
        if (!ours) {
            if (n > 0) {
                out[n++] = '\n';
            }
            std::memcpy(out + n, line, end - start);
            n += end - start;
        }
        start = end + 1;
    }
    out[n] = '\0';
    return n > 0 ? out : nullptr;
}

}  // namespace

PgError::PgError(ErrorData* edata)
    : pgt::Error(unpack_sqlstate(edata->sqlerrcode), str_or_empty(edata->message),
                 str_or_empty(edata->detail), str_or_empty(edata->hint)),
      edata_(edata) {}

int sqlstate_code(const std::string& sqlstate) {
    if (sqlstate.size() != 5) {
        return ERRCODE_INTERNAL_ERROR;
    }
    const char* s = sqlstate.c_str();
    return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]);
}

void throw_null_argument(const char* argname) {
    throw pgt::Error("22004", std::string("argument \"") + argname + "\" must not be null");
}

namespace detail {

ErrorData* copy_and_flush_error(MemoryContext saved) {
    MemoryContextSwitchTo(saved);
    ErrorData* edata = CopyErrorData();
    FlushErrorState();
    return edata;
}

void throw_pg_error(ErrorData* edata) {
    throw PgError(edata);
}

PendingError capture_current_exception() noexcept {
    PendingError p;
    try {
        throw;
    } catch (const PgError& e) {
        p.pg = e.edata();
    } catch (const pgt::Error& e) {
        p.sqlerrcode = sqlstate_code(e.sqlstate());
        p.message = copy_no_oom(e.message(), "out of memory while reporting an error");
        p.detail = copy_optional(e.detail());
        p.hint = copy_optional(e.hint());
    } catch (const std::bad_alloc&) {
        p.sqlerrcode = ERRCODE_OUT_OF_MEMORY;
        p.message = "out of memory";
    } catch (const std::exception& e) {
        p.sqlerrcode = ERRCODE_INTERNAL_ERROR;
        p.message = copy_no_oom(e.what(), "internal error");
    } catch (...) {
        p.sqlerrcode = ERRCODE_INTERNAL_ERROR;
        p.message = "unexpected C++ exception";
    }
    return p;
}

void raise_pending(const PendingError& p) {
    if (p.pg != nullptr) {
        p.pg->context = without_internal_statements(p.pg->context);
        if (p.pg->internalquery != nullptr &&
            names_ours(p.pg->internalquery, std::strlen(p.pg->internalquery))) {
            p.pg->internalquery = nullptr;
            p.pg->internalpos = 0;
        }
        ReThrowError(p.pg);
    }
    ereport(ERROR, (errcode(p.sqlerrcode), errmsg_internal("%s", p.message),
                    p.detail ? errdetail_internal("%s", p.detail) : 0,
                    p.hint ? errhint("%s", p.hint) : 0));
    pg_unreachable();
}

}  // namespace detail
}  // namespace pgt::pg
