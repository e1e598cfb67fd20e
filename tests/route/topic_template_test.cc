#include "route/topic_template.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kColumns = {"aggregatetype", "tenant"};

Column Text(absl::string_view name, absl::string_view value) {
  return Column{name, "text", ValueKind::kText, value};
}

std::string RenderOrDie(absl::string_view text,
                        const std::vector<const Column*>& values) {
  auto t = TopicTemplate::Create(text, kColumns);
  EXPECT_TRUE(t.ok()) << t.status();
  std::string out = "garbage from before";
  absl::Status s = t->Render(values.data(), &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(TopicTemplateTest, LiteralOnly) {
  EXPECT_EQ(RenderOrDie("orders", {nullptr, nullptr}), "orders");
}

TEST(TopicTemplateTest, ReplacesPlaceholders) {
  Column type = Text("aggregatetype", "order");
  Column tenant = Text("tenant", "acme");
  EXPECT_EQ(RenderOrDie("outbox.event.{aggregatetype}", {&type, &tenant}),
            "outbox.event.order");
  EXPECT_EQ(RenderOrDie("{tenant}.{aggregatetype}-{tenant}", {&type, &tenant}),
            "acme.order-acme");
}

TEST(TopicTemplateTest, DoubledBracesAreLiteral) {
  Column type = Text("aggregatetype", "order");
  EXPECT_EQ(RenderOrDie("{{aggregatetype}}", {&type, nullptr}),
            "{aggregatetype}");
  EXPECT_EQ(RenderOrDie("a{{{aggregatetype}}}b", {&type, nullptr}),
            "a{order}b");
  EXPECT_EQ(RenderOrDie("x}}y", {&type, nullptr}), "x}y");
}

TEST(TopicTemplateTest, RejectsBadTemplates) {
  for (absl::string_view bad :
       {"a.{nope}", "a.{}", "a.{aggregatetype", "a}b", "{tenant}}"}) {
    auto t = TopicTemplate::Create(bad, kColumns);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(TopicTemplate::Create("a.{nope}", kColumns).status().message(),
              HasSubstr("unknown placeholder {nope}"));
}

TEST(TopicTemplateTest, NullOrMissingColumnIsAnError) {
  auto t = TopicTemplate::Create("e.{aggregatetype}", kColumns);
  ASSERT_TRUE(t.ok());
  std::string out;
  Column null_type{"aggregatetype", "text", ValueKind::kNull, ""};
  const Column* values[] = {&null_type, nullptr};
  EXPECT_THAT(t->Render(values, &out).message(),
              HasSubstr("topic column aggregatetype is null"));
  const Column* none[] = {nullptr, nullptr};
  EXPECT_THAT(t->Render(none, &out).message(),
              HasSubstr("topic column aggregatetype is missing"));
}

TEST(TopicTemplateTest, PlaceholdersAndLiteralText) {
  auto t =
      TopicTemplate::Create("{tenant}.x.{aggregatetype}.{tenant}{{", kColumns);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->Placeholders(),
              ::testing::ElementsAre("tenant", "aggregatetype"));
  EXPECT_EQ(t->LiteralText(), ".x..{");
}

TEST(ValidateTopicNameTest, KafkaRules) {
  EXPECT_TRUE(ValidateTopicName("outbox.event.Order_1-x").ok());
  EXPECT_TRUE(ValidateTopicName(std::string(249, 'a')).ok());
  EXPECT_FALSE(ValidateTopicName(std::string(250, 'a')).ok());
  EXPECT_FALSE(ValidateTopicName("").ok());
  EXPECT_FALSE(ValidateTopicName(".").ok());
  EXPECT_FALSE(ValidateTopicName("..").ok());
  EXPECT_FALSE(ValidateTopicName("a b").ok());
  EXPECT_FALSE(ValidateTopicName("a/b").ok());
  EXPECT_FALSE(ValidateTopicName("caf\xc3\xa9").ok());
}

}  // namespace
}  // namespace outbox
