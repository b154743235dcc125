// Row identity V2 structural encoding of jsonb: a tagged pre-order walk of
// the caller's tree. Invariant: object members are written in bytewise key
// order whatever order the caller gives them, so key order never changes an
// identity; numbers use the numeric payload, so 1.0 and 1 are one identity.
#include "core/rowid/encoder.hpp"

#include "core/rowid/payload.hpp"

#include <algorithm>

namespace pgt::rowid {

void Encoder::jsonb(const JsonNode& root) {
    value_slot(TypeTag::kJsonb, 0);
    json_value(root, depth());
    after_value();
}

// `depth` counts the containers enclosing `node`, frames included.
void Encoder::json_value(const JsonNode& node, std::uint32_t depth) {
    switch (node.kind) {
        case JsonKind::kNull:
            put_byte(wire::kJsonNull);
            return;
        case JsonKind::kBool:
            put_byte(node.boolean ? wire::kJsonTrue : wire::kJsonFalse);
            return;
        case JsonKind::kString:
            put_byte(wire::kJsonString);
            put_escaped(node.string);
            return;
        case JsonKind::kNumber: {
            const payload::CanonicalNumeric n = payload::canonical_numeric(node.number);
            std::uint8_t* p = take(1 + payload::numeric_payload_size(n));
            p[0] = wire::kJsonNumber;
            payload::write_numeric_payload(p + 1, n);
            return;
        }
        case JsonKind::kArray:
            if (depth + 1 > limits_.max_depth) {
                fail_depth(depth + 1);
            }
            if (node.count != 0 && node.items == nullptr) {
                fail_value("jsonb array node without items");
            }
            put_byte(wire::kJsonArray);
            for (std::uint32_t i = 0; i < node.count; ++i) {
                json_value(node.items[i], depth + 1);
            }
            put_byte(wire::kJsonEnd);
            return;
        case JsonKind::kObject:
            json_object(node, depth + 1);
            return;
    }
    fail_value("unknown jsonb node kind");
}

// Members sorted through json_order_ (indexes, so nested objects may grow it).
void Encoder::json_object(const JsonNode& node, std::uint32_t depth) {
    if (depth > limits_.max_depth) {
        fail_depth(depth);
    }
    if (node.count != 0 && node.members == nullptr) {
        fail_value("jsonb object node without members");
    }
    put_byte(wire::kJsonObject);
    const std::size_t base = json_order_.size();
    for (std::uint32_t i = 0; i < node.count; ++i) {
        json_order_.push_back(i);
    }
    const JsonMember* members = node.members;
    std::sort(json_order_.begin() + static_cast<std::ptrdiff_t>(base), json_order_.end(),
              [members](std::uint32_t a, std::uint32_t b) {
                  return members[a].key < members[b].key;  // unsigned bytewise
              });
    for (std::size_t i = base; i < base + node.count; ++i) {
        const JsonMember& member = members[json_order_[i]];
        if (i > base && member.key == members[json_order_[i - 1]].key) {
            fail_value("duplicate jsonb object key (resolve duplicates before encoding)");
        }
        put_byte(wire::kJsonMember);
        put_escaped(member.key);
        json_value(member.value, depth);
    }
    json_order_.resize(base);
    put_byte(wire::kJsonEnd);
}

}  // namespace pgt::rowid
