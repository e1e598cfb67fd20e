// Progress: a one-line meter for long commands (outbox-audit reading Kafka,
// outbox-relay republish producing), with a rate and an estimate of the time
// left, redrawn in place on a terminal. When the stream is not a terminal
// (a log file, a pipe, systemd's journal) it writes nothing at all: logs
// stay quiet and a script's output stays parseable.
//
// Threading: not thread safe; one thread updates a Progress.
#ifndef OUTBOX_COMMON_PROGRESS_H_
#define OUTBOX_COMMON_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "outbox/clock.h"

namespace outbox {

class Progress {
 public:
  // True when `stream` is a terminal: the default for `enabled` below.
  static bool IsTerminal(FILE* stream);

  // `what` names the work ("reading Kafka"), `unit` what is counted
  // ("records"), `total` how many there are (0: unknown, no percentage or
  // estimate). `out` and `clock` are not owned and must outlive this.
  Progress(FILE* out, bool enabled, std::string what, std::string unit,
           int64_t total, const Clock* clock = RealClock());
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of `total` are done; redraws at most every kRedrawMicros.
  void Update(int64_t done);
  // Draws the last figures and ends the line (only if anything was drawn or
  // `done` is non-zero). Idempotent.
  void Finish(int64_t done);

  // The line as drawn after `elapsed_micros`, without the carriage return:
  // "reading Kafka: 120000/500000 records (24%), 40000/s, about 9 s left".
  std::string Line(int64_t done, int64_t elapsed_micros) const;

  static constexpr int64_t kRedrawMicros = 200'000;

 private:
  void Draw(int64_t done);

  FILE* const out_;
  const bool enabled_;
  const std::string what_;
  const std::string unit_;
  const int64_t total_;
  const Clock* const clock_;
  const int64_t start_micros_;
  int64_t last_draw_micros_ = -1;
  size_t last_width_ = 0;
  bool finished_ = false;
};

}  // namespace outbox

#endif  // OUTBOX_COMMON_PROGRESS_H_
