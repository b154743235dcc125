// Shared prelude of every src/core header: the pure-C++ layer's fence.
// Invariant: src/core never sees a PostgreSQL header. In a src/core
// translation unit (PGT_CORE_TU, set by the build) including postgres.h
// before or after this file is a compile error.
#pragma once

#if defined(PGT_CORE_TU)
#if defined(POSTGRES_H) || defined(POSTGRES_FE_H) || defined(C_H)
#error "src/core must not include PostgreSQL headers (postgres.h seen before a core header)"
#endif
// postgres.h and c.h #define these guards; a poisoned identifier cannot be
// defined, so a PostgreSQL header included after this one fails to compile.
#pragma GCC poison POSTGRES_H C_H POSTGRES_FE_H
#endif
