// Slots in deparsed SQL: parameter references ($1000001, ...) that no
// deparsed defining query contains, standing for SQL the delta program
// fills in (an aggregate's value, a CTE's key list).
// Invariant: a slot is replaced only outside quotes and only when no digit
// follows it ($1000001 is not the start of $10000010).
#pragma once
#include "core/core.hpp"

#include <cstddef>
#include <string>

namespace pgt::diff {

// t with every slot_name(i) (i < slots) outside quotes replaced by
// (value(i)).
template <typename N, typename F>
std::string fill_slots(const std::string& t, N&& slot_name, std::size_t slots, F&& value) {
    std::string out;
    char quote = 0;
    for (std::size_t k = 0; k < t.size();) {
        char c = t[k];
        if (quote != 0 || c == '\'' || c == '"') {
            quote = quote == 0 ? c : (c == quote ? 0 : quote);
            out += c;
            k++;
            continue;
        }
        bool done = false;
        for (std::size_t i = 0; c == '$' && i < slots && !done; i++) {
            const std::string slot = slot_name(i);
            std::size_t end = k + slot.size();
            if (t.compare(k, slot.size(), slot) == 0 &&
                (end == t.size() || t[end] < '0' || t[end] > '9')) {
                out += "(" + value(i) + ")";
                k = end;
                done = true;
            }
        }
        if (!done) {
            out += c;
            k++;
        }
    }
    return out;
}

}  // namespace pgt::diff
