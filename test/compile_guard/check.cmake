# Proves the src/core fence: a core translation unit that includes a
# PostgreSQL header (before or after a core header) must not compile, while
# the same unit without it does (so a failure here is for the right reason).
file(MAKE_DIRECTORY ${OUT})
set(FLAGS -std=c++20 -fsyntax-only -DPGT_CORE_TU -I${SRC}/src -isystem ${PGINC})

function(try_unit name body expect_ok)
  file(WRITE ${OUT}/${name}.cpp "${body}")
  execute_process(COMMAND ${CXX} ${FLAGS} ${OUT}/${name}.cpp
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: expected to compile, got:\n${err}")
  elseif(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: compiled although it includes a PostgreSQL header")
  elseif(NOT expect_ok AND NOT err MATCHES "(src/core must not include|poisoned)")
    message(FATAL_ERROR "${name}: failed for another reason:\n${err}")
  endif()
  message(STATUS "${name}: ok")
endfunction()

try_unit(control "#include \"core/error.hpp\"\nint main() { return 0; }\n" TRUE)
try_unit(pg_first "#include \"postgres.h\"\n#include \"core/error.hpp\"\n" FALSE)
try_unit(pg_after "#include \"core/error.hpp\"\n#include \"postgres.h\"\n" FALSE)
