// A delta "program": the statements one DIFFERENTIAL refresh runs, stored
// as one text in the catalog (pgt_stream_tables.delta_sql).
//
//   image steps: one per source; each statement reads that source's window
//                (parameters $1..$5) and returns (is_old bool, columns...);
//                its rows become two relations the main statement reads
//                (region_old_images(source), region_new_images(source))
//   main:        the apply statement over every window (one block of five
//                parameters per window), returning (inserted, deleted, updated)
//
// Text form: without image steps, the main statement as is. With them, a
// first line "-- pgt:images s:w:len,..." (source index, window index,
// statement length in bytes), then the image statements, then the main
// statement; lengths make the split independent of what the SQL contains.
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace pgt::diff {

struct ImageStep {
    std::size_t source = 0;  // names the relations: region_old_images(source), ...
    int window = 0;          // which window's parameters the statement takes
    std::string sql;
};

struct DeltaProgram {
    std::vector<ImageStep> images;
    std::string main;
};

std::string encode_program(const DeltaProgram& p);

// Throws kInternalError on a malformed header.
DeltaProgram decode_program(const std::string& text);

}  // namespace pgt::diff
