// The two bridges between C++ and PostgreSQL error handling (DESIGN.md §4).
// Invariant: no C++ exception crosses a PostgreSQL frame and no longjmp
// crosses a C++ frame that owns a destructor. pgt_entry() wraps every
// extern "C" entry point; pg_call() wraps every raising PostgreSQL call.
//
//   SQL call ─► pgt_entry ─► C++ code ─► pg_call ─► PostgreSQL function
//        ▲  ereport / ReThrowError   │ throw PgError  ◄─ PG_CATCH ─┘
//        └───────────────────────────┘ (destructors run on the way up)
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.hpp"

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

namespace pgt::pg {

// A PostgreSQL error caught by pg_call(). Carries the text fields for C++
// callers and the copied ErrorData, so pgt_entry() re-raises it unchanged
// (same SQLSTATE, message, detail, hint, context, position).
class PgError : public pgt::Error {
public:
    explicit PgError(ErrorData* edata);
    ErrorData* edata() const noexcept { return edata_; }

private:
    ErrorData* edata_;
};

namespace detail {
// Turns the in-flight PostgreSQL error into a PgError. Called in PG_CATCH
// after the memory context has been restored.
ErrorData* copy_and_flush_error(MemoryContext saved);
[[noreturn]] void throw_pg_error(ErrorData* edata);

// Saved form of a C++ exception, in palloc'd memory: raised after the
// catch block has ended.
struct PendingError {
    ErrorData* pg = nullptr;  // non-null: re-raise as is
    int sqlerrcode = 0;
    const char* message = nullptr;
    const char* detail = nullptr;
    const char* hint = nullptr;
};
PendingError capture_current_exception() noexcept;
[[noreturn]] void raise_pending(const PendingError& pending);

// Calls fn, storing its result through out (kept in memory, so a longjmp
// cannot clobber it) and any C++ exception in error.
template <typename F, typename Out>
__attribute__((noinline)) void invoke_into(F& fn, Out* out, std::exception_ptr* error) noexcept {
    try {
        if constexpr (std::is_void_v<decltype(fn())>) {
            fn();
        } else {
            *out = fn();
        }
    } catch (...) {
        *error = std::current_exception();
    }
}
}  // namespace detail

// Runs fn (a thin lambda around PostgreSQL calls) under PG_TRY. A
// PostgreSQL error becomes a thrown PgError; a C++ exception thrown by fn
// is carried across PG_END_TRY and rethrown. fn's result must be trivially
// copyable (Datum, pointers, integers).
template <typename F>
auto pg_call(F&& fn) -> decltype(fn()) {
    using R = decltype(fn());
    static_assert(std::is_void_v<R> || std::is_trivially_copyable_v<R>,
                  "pg_call results must be trivially copyable");
    MemoryContext saved = CurrentMemoryContext;
    ErrorData* volatile edata = nullptr;
    std::exception_ptr cxx_error;
    std::conditional_t<std::is_void_v<R>, char, R> result{};
    PG_TRY();
    { detail::invoke_into(fn, &result, &cxx_error); }
    PG_CATCH();
    { edata = detail::copy_and_flush_error(saved); }
    PG_END_TRY();
    if (edata != nullptr) {
        detail::throw_pg_error(edata);
    }
    if (cxx_error) {
        std::rethrow_exception(cxx_error);
    }
    if constexpr (!std::is_void_v<R>) {
        return result;
    }
}

// Wraps the body of an extern "C" entry point: every C++ exception leaving
// body becomes a PostgreSQL error, raised after all C++ locals are gone.
template <typename F>
auto pgt_entry(F&& body) -> decltype(body()) {
    detail::PendingError pending;
    try {
        return body();
    } catch (...) {
        pending = detail::capture_current_exception();
    }
    detail::raise_pending(pending);
}

// PostgreSQL's numeric SQLSTATE for a five-character code ("22023").
int sqlstate_code(const std::string& sqlstate);

// Raises a pgt::Error for a non-null argument that was passed NULL.
[[noreturn]] void throw_null_argument(const char* argname);

}  // namespace pgt::pg
