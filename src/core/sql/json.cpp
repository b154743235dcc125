// JSON string escaping and a small reader (see json.hpp).
#include "core/sql/json.hpp"

#include "core/error.hpp"

namespace pgt::sql {

void append_json_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (b < 0x20) {
            out += "\\u00";
            out += kHex[b >> 4];
            out += kHex[b & 0xF];
        } else {
            out += c;
        }
    }
    out += '"';
}

const JsonValue* JsonValue::find(std::string_view key) const {
    for (const auto& [name, value] : members) {
        if (name == key) {
            return &value;
        }
    }
    return nullptr;
}

namespace {

class Reader {
public:
    explicit Reader(std::string_view text) : text_(text) {}

    JsonValue document() {
        JsonValue v = value(0);
        space();
        if (pos_ != text_.size()) {
            fail("text after the value");
        }
        return v;
    }

private:
    static constexpr int kMaxDepth = 64;
    std::string_view text_;
    std::size_t pos_ = 0;

    [[noreturn]] void fail(const char* what) const {
        throw Error(sqlstate::kInternalError,
                    std::string("malformed JSON at byte ") + std::to_string(pos_) + ": " + what);
    }
    void space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                       text_[pos_] == '\r' || text_[pos_] == '\t')) {
            pos_++;
        }
    }
    char peek() {
        space();
        if (pos_ >= text_.size()) {
            fail("unexpected end");
        }
        return text_[pos_];
    }
    void expect(char c) {
        if (peek() != c) {
            fail("unexpected character");
        }
        pos_++;
    }
    bool word(std::string_view w) {
        if (text_.substr(pos_, w.size()) != w) {
            return false;
        }
        pos_ += w.size();
        return true;
    }

    JsonValue value(int depth) {
        if (depth > kMaxDepth) {
            fail("nested too deep");
        }
        JsonValue v;
        const char c = peek();
        if (c == '{') {
            v.kind = JsonValue::Kind::kObject;
            members(v, depth);
        } else if (c == '[') {
            v.kind = JsonValue::Kind::kArray;
            items(v, depth);
        } else if (c == '"') {
            v.kind = JsonValue::Kind::kString;
            v.string = string();
        } else if (c >= '0' && c <= '9') {
            v.kind = JsonValue::Kind::kNumber;
            v.number = number();
        } else if (word("true") || word("false")) {
            v.kind = JsonValue::Kind::kBool;
            v.boolean = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
        } else if (word("null")) {
            v.kind = JsonValue::Kind::kNull;
        } else {
            fail("not a value");
        }
        return v;
    }

    void members(JsonValue& v, int depth) {
        expect('{');
        if (peek() == '}') {
            pos_++;
            return;
        }
        for (;;) {
            if (peek() != '"') {
                fail("expected a key");
            }
            std::string key = string();
            expect(':');
            v.members.emplace_back(std::move(key), value(depth + 1));
            if (peek() == '}') {
                pos_++;
                return;
            }
            expect(',');
        }
    }

    void items(JsonValue& v, int depth) {
        expect('[');
        if (peek() == ']') {
            pos_++;
            return;
        }
        for (;;) {
            v.items.push_back(value(depth + 1));
            if (peek() == ']') {
                pos_++;
                return;
            }
            expect(',');
        }
    }

    uint64_t number() {
        uint64_t n = 0;
        const std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const auto d = static_cast<uint64_t>(text_[pos_] - '0');
            if (n > (UINT64_MAX - d) / 10) {
                fail("number out of range");
            }
            n = n * 10 + d;
            pos_++;
        }
        if ((pos_ - start > 1 && text_[start] == '0') ||
            (pos_ < text_.size() &&
             (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))) {
            fail("not a non-negative integer");
        }
        return n;
    }

    unsigned hex4() {
        if (pos_ + 4 > text_.size()) {
            fail("short \\u escape");
        }
        unsigned u = 0;
        for (int i = 0; i < 4; i++) {
            const char h = text_[pos_++];
            u <<= 4;
            if (h >= '0' && h <= '9') {
                u |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
                u |= static_cast<unsigned>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
                u |= static_cast<unsigned>(h - 'A' + 10);
            } else {
                fail("bad \\u escape");
            }
        }
        return u;
    }

    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    unsigned escaped_code_point() {
        unsigned cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (!word("\\u")) {
                fail("lone surrogate");
            }
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) {
                fail("bad surrogate pair");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone surrogate");
        }
        return cp;
    }

    std::string string() {
        pos_++;  // the opening quote
        std::string out;
        for (;;) {
            if (pos_ >= text_.size()) {
                fail("unterminated string");
            }
            const char c = text_[pos_++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("control character in a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= text_.size()) {
                fail("unterminated escape");
            }
            const char e = text_[pos_++];
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    utf8(out, escaped_code_point());
                    break;
                default:
                    fail("bad escape");
            }
        }
    }
};

}  // namespace

JsonValue parse_json(std::string_view text) {
    return Reader(text).document();
}

}  // namespace pgt::sql
