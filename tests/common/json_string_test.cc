#include <string>

#include "common/logging.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

std::string Json(absl::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// The escapes Jackson writes (so Debezium-compatible envelopes match byte
// for byte): the short forms where JSON has one, \u00XX for the rest.
TEST(AppendJsonStringTest, EscapesAsJacksonDoes) {
  EXPECT_EQ(Json("plain"), "\"plain\"");
  EXPECT_EQ(Json("q\"b\\"), "\"q\\\"b\\\\\"");
  EXPECT_EQ(Json("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Json(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(Json("h\xc3\xa9 /"), "\"h\xc3\xa9 /\"");  // UTF-8 and / as is
}

}  // namespace
}  // namespace outbox
