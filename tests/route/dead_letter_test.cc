#include "route/dead_letter.h"

#include <string>

#include "gtest/gtest.h"

namespace outbox {
namespace {

std::string HeaderOf(const Record& r, const std::string& name) {
  for (const outbox::Header& h : r.headers) {
    if (h.name == name) return std::string(h.value);
  }
  return "<none>";
}

TEST(DeadLetterTest, CarriesIdErrorAndExtrasAndOutlivesItsInputs) {
  DeadLetter dl;
  const Record* r;
  {
    std::string id = "e-1", error = "key column is null", lsn = "0/16B3748";
    r = &dl.Build("outbox.dead_letter", id, "{\"row\":1}", false, error,
                  {{"lsn", lsn}});
    id.assign("XXX");
    error.assign("YYY");
    lsn.assign("ZZZ");
  }
  EXPECT_EQ(r->topic, "outbox.dead_letter");
  EXPECT_EQ(r->key, "e-1");
  EXPECT_EQ(r->value, "{\"row\":1}");
  EXPECT_EQ(HeaderOf(*r, "id"), "e-1");
  EXPECT_EQ(HeaderOf(*r, "error"), "key column is null");
  EXPECT_EQ(HeaderOf(*r, "lsn"), "0/16B3748");
  EXPECT_EQ(HeaderOf(*r, "truncated"), "<none>");
}

TEST(DeadLetterTest, OversizedValueIsTruncatedAndSaysSo) {
  DeadLetter dl;
  std::string big(DeadLetter::kMaxValue + 1, 'y');
  const Record& r = dl.Build("dlq", "e-2", big, false, "too large");
  EXPECT_EQ(r.value.size(), DeadLetter::kTruncatedValue);
  EXPECT_EQ(HeaderOf(r, "truncated"), std::to_string(big.size()));
  const Record& small = dl.Build("dlq", "", "", true, "null payload");
  EXPECT_TRUE(small.value_is_null);
  EXPECT_TRUE(small.key_is_null);
  EXPECT_EQ(HeaderOf(small, "truncated"), "<none>");
}

}  // namespace
}  // namespace outbox
