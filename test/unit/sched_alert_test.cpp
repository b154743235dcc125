// Unit tests for src/core/sched/alert: payload shapes, JSON escaping and the
// NOTIFY size limit. Invariant: every payload checked here is also run
// through a small JSON validator, so a shape test cannot pass on broken JSON.
#include "core/sched/alert.hpp"

#include "core/error.hpp"
#include "core/notify/payload.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace {

using pgt::notify::kPayloadLimit;
using pgt::sched::AlertEvent;
using pgt::sched::auto_suspended_alert;
using pgt::sched::diamond_partial_failure_alert;
using pgt::sched::falling_behind_alert;
using pgt::sched::refresh_failed_alert;

// Minimal JSON validator for the subset the payloads use: objects, arrays,
// strings (no raw control bytes), integers, true/false.
class JsonCheck {
public:
    explicit JsonCheck(const std::string& s) : s_(s) {}
    bool valid() { return value() && pos_ == s_.size(); }

private:
    bool value() {
        if (pos_ >= s_.size()) {
            return false;
        }
        switch (s_[pos_]) {
            case '{':
                return sequence('}', true);
            case '[':
                return sequence(']', false);
            case '"':
                return string();
            case 't':
                return word("true");
            case 'f':
                return word("false");
            default:
                return number();
        }
    }
    bool sequence(char close, bool object) {
        ++pos_;
        if (pos_ < s_.size() && s_[pos_] == close) {
            ++pos_;
            return true;
        }
        while (true) {
            if (object && !(string() && pos_ < s_.size() && s_[pos_++] == ':')) {
                return false;
            }
            if (!value() || pos_ >= s_.size()) {
                return false;
            }
            const char c = s_[pos_++];
            if (c == close) {
                return true;
            }
            if (c != ',') {
                return false;
            }
        }
    }
    bool string() {
        if (pos_ >= s_.size() || s_[pos_++] != '"') {
            return false;
        }
        while (pos_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[pos_++]);
            if (c == '"') {
                return true;
            }
            if (c < 0x20) {
                return false;
            }
            if (c == '\\') {
                if (pos_ >= s_.size()) {
                    return false;
                }
                const char e = s_[pos_++];
                if (e == 'u') {
                    pos_ += 4;
                } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
                    return false;
                }
            }
        }
        return false;
    }
    bool word(const std::string& w) {
        if (s_.compare(pos_, w.size(), w) != 0) {
            return false;
        }
        pos_ += w.size();
        return true;
    }
    bool number() {
        const std::size_t start = pos_;
        if (pos_ < s_.size() && s_[pos_] == '-') {
            ++pos_;
        }
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
            ++pos_;
        }
        return pos_ > start;
    }
    const std::string& s_;
    std::size_t pos_ = 0;
};

bool valid_json(const std::string& s) {
    return JsonCheck(s).valid();
}

// True when s is well-formed UTF-8.
bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        if (i + n > s.size()) {
            return false;
        }
        for (std::size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
                return false;
            }
        }
        i += n;
    }
    return true;
}

// ---- shapes ------------------------------------------------------------------

TEST(SchedAlert, event_names_and_channel) {
    EXPECT_EQ(event_name(AlertEvent::FallingBehind), "scheduler_falling_behind");
    EXPECT_EQ(event_name(AlertEvent::AutoSuspended), "auto_suspended");
    EXPECT_EQ(event_name(AlertEvent::RefreshFailed), "refresh_failed");
    EXPECT_EQ(event_name(AlertEvent::DiamondGroupPartialFailure), "diamond_group_partial_failure");
    EXPECT_EQ(pgt::sched::kAlertChannel, "pg_trickle_alert");
}

TEST(SchedAlert, falling_behind_payload) {
    const std::string p = falling_behind_alert("public.orders_daily", 900, 1000, 3);
    EXPECT_EQ(p, R"({"event":"scheduler_falling_behind","stream_table":"public.orders_daily",)"
                 R"("duration_ms":900,"interval_ms":1000,"cycles":3})");
    EXPECT_TRUE(valid_json(p));
}

TEST(SchedAlert, auto_suspended_payload) {
    const std::string p =
        auto_suspended_alert("public.t", "42P01", 3, "relation \"src\" does not exist");
    EXPECT_EQ(p, R"({"event":"auto_suspended","stream_table":"public.t","sqlstate":"42P01",)"
                 R"("consecutive_errors":3,"message":"relation \"src\" does not exist"})");
    EXPECT_TRUE(valid_json(p));
}

TEST(SchedAlert, refresh_failed_payload) {
    const std::string p = refresh_failed_alert("s.t", "40P01", true, 0, "deadlock detected");
    EXPECT_EQ(p, R"({"event":"refresh_failed","stream_table":"s.t","sqlstate":"40P01",)"
                 R"("retryable":true,"consecutive_errors":0,"message":"deadlock detected"})");
    EXPECT_TRUE(valid_json(p));
    EXPECT_NE(refresh_failed_alert("s.t", "42P01", false, 2, "x").find("\"retryable\":false"),
              std::string::npos);
}

TEST(SchedAlert, diamond_partial_failure_payload) {
    const std::string p = diamond_partial_failure_alert({"public.b", "public.c", "public.d"},
                                                        "public.c", "22012", "division by zero");
    EXPECT_EQ(p, R"({"event":"diamond_group_partial_failure",)"
                 R"("group":["public.b","public.c","public.d"],"group_size":3,)"
                 R"("failed":"public.c","sqlstate":"22012","message":"division by zero"})");
    EXPECT_TRUE(valid_json(p));
}

// ---- escaping ----------------------------------------------------------------

TEST(SchedAlert, names_and_message_are_json_escaped) {
    const std::string p = refresh_failed_alert("public.\"Odd\\Name\"", "XX000", false, 1,
                                               "line1\nline2\ttab \x01 end");
    EXPECT_NE(p.find(R"("stream_table":"public.\"Odd\\Name\"")"), std::string::npos) << p;
    EXPECT_NE(p.find(R"("message":"line1\u000aline2\u0009tab \u0001 end")"), std::string::npos)
        << p;
    EXPECT_TRUE(valid_json(p));
}

TEST(SchedAlert, non_ascii_passes_through_as_utf8) {
    const std::string p = auto_suspended_alert("public.größe", "22P02", 3, "ungültig — 値");
    EXPECT_NE(p.find("\"public.größe\""), std::string::npos);
    EXPECT_NE(p.find("\"ungültig — 値\""), std::string::npos);
    EXPECT_TRUE(valid_json(p));
    EXPECT_TRUE(valid_utf8(p));
}

// ---- size limit ----------------------------------------------------------------

TEST(SchedAlert, short_payload_has_no_truncated_flag) {
    EXPECT_EQ(auto_suspended_alert("a.b", "42P01", 3, "m").find("truncated"), std::string::npos);
}

TEST(SchedAlert, long_message_is_cut_below_the_limit) {
    const std::string message(20000, 'x');
    const std::string p = refresh_failed_alert("public.t", "XX000", false, 1, message);
    EXPECT_LT(p.size(), kPayloadLimit);
    EXPECT_GT(p.size(), kPayloadLimit - 8);  // uses the room it has
    EXPECT_EQ(p.substr(p.size() - 20), "x\",\"truncated\":true}");
    EXPECT_TRUE(valid_json(p));
}

TEST(SchedAlert, message_that_just_fits_is_kept_whole) {
    const std::string head = auto_suspended_alert("public.t", "XX000", 3, "");
    const std::size_t room = kPayloadLimit - 1 - head.size();
    const std::string fits = auto_suspended_alert("public.t", "XX000", 3, std::string(room, 'y'));
    EXPECT_EQ(fits.size(), kPayloadLimit - 1);
    EXPECT_EQ(fits.find("truncated"), std::string::npos);
    const std::string over =
        auto_suspended_alert("public.t", "XX000", 3, std::string(room + 1, 'y'));
    EXPECT_LT(over.size(), kPayloadLimit);
    EXPECT_NE(over.find("\"truncated\":true"), std::string::npos);
}

TEST(SchedAlert, truncation_never_splits_a_utf8_character) {
    for (std::size_t pad = 0; pad < 4; ++pad) {
        const std::string message = std::string(pad, 'p') + [] {
            std::string s;
            for (int i = 0; i < 3000; ++i) {
                s += "値";  // three bytes
            }
            return s;
        }();
        const std::string p = auto_suspended_alert("public.t", "XX000", 3, message);
        EXPECT_LT(p.size(), kPayloadLimit) << pad;
        EXPECT_TRUE(valid_utf8(p)) << pad;
        EXPECT_TRUE(valid_json(p)) << pad;
    }
}

TEST(SchedAlert, truncation_never_splits_an_escape) {
    const std::string message(5000, '\n');  // six bytes each once escaped
    const std::string p = auto_suspended_alert("public.t", "XX000", 3, message);
    EXPECT_LT(p.size(), kPayloadLimit);
    EXPECT_TRUE(valid_json(p));
    EXPECT_NE(p.find("\\u000a\",\"truncated\":true}"), std::string::npos);
}

TEST(SchedAlert, huge_group_keeps_group_size_and_marks_truncation) {
    std::vector<std::string> group;
    for (int i = 0; i < 500; ++i) {
        group.push_back("public.member_with_a_long_name_" + std::to_string(i));
    }
    const std::string p = diamond_partial_failure_alert(group, group[7], "XX000", "boom");
    EXPECT_LT(p.size(), kPayloadLimit);
    EXPECT_TRUE(valid_json(p));
    EXPECT_NE(p.find("\"group_size\":500"), std::string::npos);
    EXPECT_NE(p.find("\"message\":\"boom\",\"truncated\":true}"), std::string::npos);
    EXPECT_NE(p.find("\"public.member_with_a_long_name_0\""), std::string::npos);
    EXPECT_EQ(p.find("\"public.member_with_a_long_name_499\""), std::string::npos);
}

TEST(SchedAlert, huge_group_and_long_message_still_fit) {
    const std::vector<std::string> group(1000, "public.g");
    const std::string p =
        diamond_partial_failure_alert(group, "public.g", "XX000", std::string(9000, 'm'));
    EXPECT_LT(p.size(), kPayloadLimit);
    EXPECT_TRUE(valid_json(p));
    EXPECT_EQ(p.find("truncated"), p.rfind("truncated"));  // marked once
}

TEST(SchedAlert, impossible_name_throws_54000) {
    const std::string name(9000, 'n');
    try {
        auto_suspended_alert(name, "XX000", 3, "m");
        FAIL() << "no error";
    } catch (const pgt::Error& e) {
        EXPECT_EQ(e.sqlstate(), "54000");
        EXPECT_EQ(e.detail().back(), '.');
    }
    EXPECT_THROW(falling_behind_alert(name, 1, 2, 3), pgt::Error);
}

}  // namespace
