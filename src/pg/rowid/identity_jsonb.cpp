// jsonb values of a row identity: JsonbIterator tokens become the core's
// JsonNode tree (in the call site's arenas), which the encoder writes.
// Runs guarded only (a plan with a jsonb field never runs unguarded).
#include "pg/rowid/encode_ctx.hpp"

#include <cstdint>

extern "C" {
#include "postgres.h"
#include "utils/jsonb.h"
}

namespace pgt::pg::encode {
namespace {

rowid::JsonNode* json_target(EncodeCtx& c) {
    if (c.json_frames.empty()) {
        return &c.json_root;
    }
    JsonFrame& f = c.json_frames.back();
    if (f.filled >= f.count) {
        fail_corrupt("jsonb container holds more values than it declares");
    }
    if (f.items != nullptr) {
        return &f.items[f.filled];
    }
    return f.members != nullptr ? &f.members[f.filled].value : &c.json_root;
}

void json_done(EncodeCtx& c) {
    if (!c.json_frames.empty()) {
        ++c.json_frames.back().filled;
    }
}

void json_open(EncodeCtx& c, JsonbIteratorToken token, const JsonbValue& v) {
    rowid::JsonNode* node = json_target(c);
    JsonFrame f;
    if (token == WJB_BEGIN_ARRAY && v.val.array.rawScalar) {
        f.count = 1;  // the scalar becomes the node itself
    } else if (token == WJB_BEGIN_ARRAY) {
        f.count = static_cast<std::uint32_t>(v.val.array.nElems);
        f.items = c.json_nodes.take(f.count);
        *node = rowid::json_array({f.items, f.count});
    } else {
        f.count = static_cast<std::uint32_t>(v.val.object.nPairs);
        f.members = c.json_members.take(f.count);
        *node = rowid::json_object({f.members, f.count});
    }
    c.json_frames.push_back(f);
}

rowid::JsonNode json_scalar(EncodeCtx& c, const JsonbValue& v) {
    switch (v.type) {
        case jbvNull:
            return rowid::json_null();
        case jbvString:
            return rowid::json_string(
                {v.val.string.val, static_cast<std::size_t>(v.val.string.len)});
        case jbvNumeric:
            return rowid::json_number(
                read_numeric(c, reinterpret_cast<const varlena*>(v.val.numeric)));
        case jbvBool:
            return rowid::json_bool(v.val.boolean);
        default:
            fail_corrupt("unexpected jsonb scalar type");
    }
}

void json_token(EncodeCtx& c, JsonbIteratorToken token, const JsonbValue& v) {
    switch (token) {
        case WJB_BEGIN_ARRAY:
        case WJB_BEGIN_OBJECT:
            json_open(c, token, v);
            return;
        case WJB_KEY:
            if (c.json_frames.empty() || c.json_frames.back().members == nullptr) {
                fail_corrupt("jsonb key outside an object");
            }
            json_target(c);  // bounds check
            c.json_frames.back().members[c.json_frames.back().filled].key = {
                v.val.string.val, static_cast<std::size_t>(v.val.string.len)};
            return;
        case WJB_VALUE:
        case WJB_ELEM:
            *json_target(c) = json_scalar(c, v);
            json_done(c);
            return;
        case WJB_END_ARRAY:
        case WJB_END_OBJECT:
            c.json_frames.pop_back();
            json_done(c);
            return;
        default:
            fail_corrupt("unexpected jsonb iterator token");
    }
}

}  // namespace

void write_jsonb(EncodeCtx& c, const FieldPlan&, Datum d) {
    Jsonb* jb = DatumGetJsonbP(d);
    c.json_nodes.reset();
    c.json_members.reset();
    c.json_frames.clear();
    c.json_root = rowid::json_null();
    JsonbIterator* it = JsonbIteratorInit(&jb->root);
    JsonbValue v;
    JsonbIteratorToken token;
    while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
        json_token(c, token, v);
    }
    c.encoder.jsonb(c.json_root);
}

}  // namespace pgt::pg::encode
