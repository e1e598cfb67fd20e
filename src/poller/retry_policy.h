// RetryPolicy: what happens to an outbox row whose delivery failed.
//
// Each failure counts one attempt. A row that has used max_attempts goes to
// the dead-letter state; otherwise it waits before its next claim, with
// exponential backoff and full jitter:
//
//   cap(n)   = min(backoff_max_ms, backoff_initial_ms * 2^(n-1))   n = attempts
//   delay(n) = uniform integer in [0, cap(n)]
//
// Full jitter spreads the retries of rows that failed together (a Kafka
// hiccup fails a whole batch) so they do not come back as one burst, and
// several pollers do not retry in lockstep.
//
// Thread safety: not thread safe (owns its random generator). Deterministic
// for a given seed, so tests pin the sequence.
#ifndef OUTBOX_POLLER_RETRY_POLICY_H_
#define OUTBOX_POLLER_RETRY_POLICY_H_

#include <cstdint>
#include <random>

namespace outbox {

class RetryPolicy {
 public:
  struct Decision {
    int32_t attempts = 0;        // attempts after this failure
    bool dead = false;           // move to the dead-letter state
    int64_t retry_delay_ms = 0;  // wait before the next claim (0 when dead)
  };

  // max_attempts >= 1, 1 <= initial_ms <= max_ms (config validation).
  RetryPolicy(int32_t max_attempts, int64_t backoff_initial_ms,
              int64_t backoff_max_ms, uint64_t seed);

  // The row had `prior_attempts` failed attempts before this one.
  Decision OnFailure(int32_t prior_attempts);

  // cap(attempts) above; saturates at backoff_max_ms without overflow.
  int64_t CapMs(int32_t attempts) const;

 private:
  int32_t max_attempts_;
  int64_t initial_ms_;
  int64_t max_ms_;
  std::mt19937_64 rng_;
};

}  // namespace outbox

#endif  // OUTBOX_POLLER_RETRY_POLICY_H_
