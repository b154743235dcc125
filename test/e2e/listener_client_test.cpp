// A listener written with a real client library: test/listener/mirror.py
// (Debian's python3-psycopg2) follows docs/notifications.md's listener
// protocol through inserts, updates, deletes, TRUNCATE, keyless duplicates,
// a new query and drops, and checks its mirror against the stream tables
// after each step.
#include <cstdio>
#include <string>

#include "fixture.hpp"

namespace pgt::e2e {
namespace {

class ListenerClient : public DbTest {};

TEST_F(ListenerClient, a_psycopg2_listener_keeps_its_mirror_equal_to_the_stream_tables) {
    const std::string command =
        "/usr/bin/python3 " PGT_SOURCE_DIR "/test/listener/mirror.py '" + conninfo() + "' 2>&1";
    FILE* out = popen(command.c_str(), "r");
    ASSERT_NE(out, nullptr);
    std::string text;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), out)) > 0;) {
        text.append(buf, n);
    }
    const int status = pclose(out);
    EXPECT_EQ(status, 0) << text;
    EXPECT_NE(text.find(" passed, 0 failed"), std::string::npos) << text;
}

}  // namespace
}  // namespace pgt::e2e
