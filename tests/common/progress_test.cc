#include "common/progress.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace outbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What was written to `f` so far.
std::string Contents(FILE* f) {
  fflush(f);
  long size = ftell(f);
  std::string s(static_cast<size_t>(size), '\0');
  rewind(f);
  size_t n = fread(s.data(), 1, s.size(), f);
  s.resize(n);
  fseek(f, 0, SEEK_END);
  return s;
}

class ProgressTest : public ::testing::Test {
 protected:
  void SetUp() override { out_ = tmpfile(); }
  void TearDown() override { fclose(out_); }
  FILE* out_ = nullptr;
  FakeClock clock_;
};

TEST_F(ProgressTest, LineHasCountPercentRateAndEstimate) {
  Progress p(out_, true, "reading Kafka", "records", 500000, &clock_);
  EXPECT_EQ(p.Line(120000, 3'000'000),
            "reading Kafka: 120000/500000 records (24%), 40000/s, about 10 s "
            "left");
  EXPECT_EQ(p.Line(100000, 1'000'000),
            "reading Kafka: 100000/500000 records (20%), 100000/s, about 4 s "
            "left");
  // Minutes and hours read as such.
  EXPECT_THAT(p.Line(1000, 1'000'000), HasSubstr("about 8 min 19 s left"));
  EXPECT_THAT(p.Line(10, 1'000'000), HasSubstr("about 13 h 53 min left"));
  EXPECT_EQ(p.Line(500000, 5'000'000),
            "reading Kafka: 500000/500000 records (100%), 100000/s");
}

TEST_F(ProgressTest, NoRateInTheFirstSecondAndNoEstimateWithoutTotal) {
  Progress known(out_, true, "republishing", "events", 10, &clock_);
  EXPECT_EQ(known.Line(3, 500'000), "republishing: 3/10 events (30%)");
  Progress unknown(out_, true, "reading", "rows", 0, &clock_);
  EXPECT_EQ(unknown.Line(300, 2'000'000), "reading: 300 rows, 150/s");
}

TEST_F(ProgressTest, RedrawsInPlaceAtMostEveryRedrawInterval) {
  Progress p(out_, true, "reading Kafka", "records", 100, &clock_);
  p.Update(1);
  p.Update(2);  // same instant: not drawn
  clock_.Advance(Progress::kRedrawMicros);
  p.Update(50);
  std::string s = Contents(out_);
  EXPECT_EQ(s,
            "\rreading Kafka: 1/100 records (1%)"
            "\rreading Kafka: 50/100 records (50%)");
  EXPECT_THAT(s, Not(HasSubstr("\n")));
  clock_.Advance(1'000'000);
  p.Finish(100);
  p.Finish(100);  // idempotent
  p.Update(100);  // after Finish: nothing
  s = Contents(out_);
  EXPECT_THAT(s, HasSubstr("\rreading Kafka: 100/100 records (100%), 83/s\n"));
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(s.find('\n'), s.size() - 1);
}

TEST_F(ProgressTest, AShorterLineBlanksTheRestOfTheLongerOne) {
  Progress p(out_, true, "x", "records", 0, &clock_);
  p.Update(123456);
  clock_.Advance(Progress::kRedrawMicros);
  p.Update(7);
  EXPECT_EQ(Contents(out_), "\rx: 123456 records\rx: 7 records     ");
}

TEST_F(ProgressTest, DisabledWritesNothing) {
  Progress p(out_, false, "reading Kafka", "records", 100, &clock_);
  p.Update(10);
  clock_.Advance(5'000'000);
  p.Update(90);
  p.Finish(100);
  EXPECT_EQ(Contents(out_), "");
}

TEST_F(ProgressTest, NothingToReportEndsWithoutALine) {
  Progress p(out_, true, "republishing", "events", 0, &clock_);
  p.Finish(0);
  EXPECT_EQ(Contents(out_), "");
}

TEST_F(ProgressTest, AFileIsNotATerminal) {
  EXPECT_FALSE(Progress::IsTerminal(out_));
  EXPECT_FALSE(Progress::IsTerminal(nullptr));
}

}  // namespace
}  // namespace outbox
