#include "common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace outbox {
namespace {

// "9 s", "4 min 10 s", "2 h 5 min".
std::string Duration(int64_t seconds) {
  if (seconds < 60) return absl::StrCat(seconds, " s");
  if (seconds < 3600) {
    return absl::StrCat(seconds / 60, " min ", seconds % 60, " s");
  }
  return absl::StrCat(seconds / 3600, " h ", seconds % 3600 / 60, " min");
}

}  // namespace

bool Progress::IsTerminal(FILE* stream) {
  return stream != nullptr && isatty(fileno(stream)) == 1;
}

Progress::Progress(FILE* out, bool enabled, std::string what, std::string unit,
                   int64_t total, const Clock* clock)
    : out_(out),
      enabled_(enabled && out != nullptr),
      what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      clock_(clock),
      start_micros_(clock->NowMicros()) {}

std::string Progress::Line(int64_t done, int64_t elapsed_micros) const {
  std::string line = absl::StrCat(what_, ": ", done);
  if (total_ > 0) absl::StrAppend(&line, "/", total_);
  absl::StrAppend(&line, " ", unit_);
  if (total_ > 0) {
    absl::StrAppend(&line, " (", std::min<int64_t>(100, done * 100 / total_),
                    "%)");
  }
  if (elapsed_micros < 1'000'000 || done <= 0) return line;
  const double rate = done * 1e6 / static_cast<double>(elapsed_micros);
  absl::StrAppend(&line, ", ", static_cast<int64_t>(rate), "/s");
  if (total_ > 0 && done < total_) {
    const int64_t left = static_cast<int64_t>((total_ - done) / rate + 0.5);
    absl::StrAppend(&line, ", about ", Duration(left), " left");
  }
  return line;
}

void Progress::Update(int64_t done) {
  if (!enabled_ || finished_) return;
  const int64_t now = clock_->NowMicros();
  if (last_draw_micros_ >= 0 && now - last_draw_micros_ < kRedrawMicros) {
    return;
  }
  last_draw_micros_ = now;
  Draw(done);
}

void Progress::Finish(int64_t done) {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (last_draw_micros_ < 0 && done == 0) return;
  Draw(done);
  fputc('\n', out_);
  fflush(out_);
}

void Progress::Draw(int64_t done) {
  std::string line = Line(done, clock_->NowMicros() - start_micros_);
  const size_t width = line.size();
  // Blank what a longer previous line left behind.
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  fprintf(out_, "\r%s", line.c_str());
  fflush(out_);
}

}  // namespace outbox
