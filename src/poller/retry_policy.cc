#include "poller/retry_policy.h"

#include <algorithm>

namespace outbox {

RetryPolicy::RetryPolicy(int32_t max_attempts, int64_t backoff_initial_ms,
                         int64_t backoff_max_ms, uint64_t seed)
    : max_attempts_(std::max(max_attempts, 1)),
      initial_ms_(std::max<int64_t>(backoff_initial_ms, 1)),
      max_ms_(
          std::max(backoff_max_ms, std::max<int64_t>(backoff_initial_ms, 1))),
      rng_(seed) {}

int64_t RetryPolicy::CapMs(int32_t attempts) const {
  int64_t cap = initial_ms_;
  for (int32_t i = 1; i < attempts && cap < max_ms_; ++i) cap *= 2;
  return std::min(cap, max_ms_);
}

RetryPolicy::Decision RetryPolicy::OnFailure(int32_t prior_attempts) {
  Decision d;
  d.attempts = std::max(prior_attempts, 0) + 1;
  if (d.attempts >= max_attempts_) {
    d.dead = true;
    return d;
  }
  std::uniform_int_distribution<int64_t> jitter(0, CapMs(d.attempts));
  d.retry_delay_ms = jitter(rng_);
  return d;
}

}  // namespace outbox
