// outbox-loadgen: open-loop writer for the steady-load latency benchmark
// (issue 5, bench/latency.py).
//
//   outbox-loadgen --pg CONNINFO --rate R --seconds S [--writers W]
//                  [--run TAG] [--aggregatetype order] [--out FILE]
//                  [--max-seconds M] [--per-txn K]
//                  [--keys K] [--rollback-every N] [--reconnect]
//
// Inserts R*S outbox rows, one per transaction (autocommit, durable commit as
// the server is configured), or K per transaction with --per-txn K: a
// transaction of events i..i+K-1 starts when the last of them is due, so
// the earlier ones wait for it and that wait counts as their latency from
// the scheduled time (not from the commit). Event i is due at t0 + i/R whatever
// happened to earlier events (open loop, no coordinated omission): W writer
// threads, each with its own connection, take the next event number, sleep
// until its due time (CLOCK_REALTIME, absolute) and insert it; a writer that is
// late sends at once and the delay shows as lateness. Each payload is about 350
// bytes of JSON carrying {"run": TAG, "seq": i, "sched_ns": due, "sent_ns":
// send time} (nanoseconds since the epoch), which every relay delivers byte for
// byte, so a consumer on the same clock (outbox-latency-consumer) can measure
// latency.
//
// Past saturation the writers fall ever further behind; --max-seconds M stops
// sending M seconds after the start (M >= S), and the events not sent by then
// are counted as "unsent" (so a run takes at most M seconds).
//
// For long runs with faults (bench/soak.sh): --keys K gives each writer
// thread K keys of its own ("w<thread>-k<j>", its events in turn), so one
// key's events are written by one connection in creation order and a
// consumer can check per-key order (the default is aggregate id
// i % 10000, any writer); --rollback-every N ends every Nth transaction of
// each writer in ROLLBACK (its events are counted as rolled back, never
// committed: a consumer must not see them); --reconnect reopens a lost
// connection (every 200 ms until it succeeds) and carries on, counting the
// events of the failed transactions as errors without failing the run (the
// database, not this count, says what committed when the server went away
// mid-commit). SIGTERM or SIGINT stops the writers early: the events not
// sent yet count as unsent and the report is printed as usual.
//
// --out writes one CSV line per event: seq,sched_ns,sent_ns,ack_ns,ok (ack =
// the commit's reply); it is written to FILE.tmp and renamed when complete.
// stdout gets one JSON line: counts, lateness (sent - scheduled) and commit
// time (ack - sent) percentiles in ms, and the commit rate achieved.
// Exit 0 (also with unsent events); 1 if any insert failed (the first error
// is printed; with --reconnect it is printed and the exit stays 0); 2 on bad
// arguments or when a connection cannot be opened.

#include <libpq-fe.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Event {
  int64_t sched_ns = 0;
  int64_t sent_ns = 0;
  int64_t ack_ns = 0;
  bool ok = false;
};

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(int64_t t_ns) {
  timespec ts{static_cast<time_t>(t_ns / 1'000'000'000),
              static_cast<long>(t_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) ==
         EINTR) {
  }
}

// Set by SIGTERM/SIGINT: writers stop taking events.
volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "outbox-loadgen: %s\nusage: outbox-loadgen --pg CONNINFO --rate "
               "R --seconds S [--writers W] [--run TAG] [--aggregatetype T] "
               "[--out FILE] [--max-seconds M] [--per-txn K] [--keys K] "
               "[--rollback-every N] [--reconnect]\n",
               msg);
  std::exit(2);
}

double pct_ms(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(p / 100 * v.size()));
  k = std::clamp<size_t>(k, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k] / 1e6;
}

constexpr char kInsert[] =
    "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
    "VALUES (gen_random_uuid(), $1, $2, 'OrderCreated', $3::jsonb)";

}  // namespace

int main(int argc, char** argv) {
  std::string conninfo, run = "run", aggregatetype = "order", out;
  double rate = 0, seconds = 0, max_seconds = 0;
  int writers = 16;
  int per_txn = 1;
  int keys = 0;            // per writer; 0: aggregate id i % 10000
  int rollback_every = 0;  // 0: every transaction commits
  bool reconnect = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reconnect") {
      reconnect = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    const char* v = argv[++i];
    if (a == "--pg") {
      conninfo = v;
    } else if (a == "--rate") {
      rate = std::atof(v);
    } else if (a == "--seconds") {
      seconds = std::atof(v);
    } else if (a == "--writers") {
      writers = std::atoi(v);
    } else if (a == "--run") {
      run = v;
    } else if (a == "--aggregatetype") {
      aggregatetype = v;
    } else if (a == "--out") {
      out = v;
    } else if (a == "--per-txn") {
      per_txn = std::atoi(v);
    } else if (a == "--max-seconds") {
      max_seconds = std::atof(v);
    } else if (a == "--keys") {
      keys = std::atoi(v);
    } else if (a == "--rollback-every") {
      rollback_every = std::atoi(v);
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (rate <= 0 || seconds <= 0 || writers <= 0)
    usage("--rate, --seconds and --writers must be positive");
  if (per_txn < 1) usage("--per-txn must be positive");
  if (keys < 0 || rollback_every < 0)
    usage("--keys and --rollback-every must not be negative");
  // A rollback needs a transaction block even for one event.
  const bool txn_block = per_txn > 1 || rollback_every > 0;
  if (max_seconds != 0 && max_seconds < seconds)
    usage("--max-seconds must be at least --seconds");
  if (run.find_first_of("\"\\") != std::string::npos)
    usage("--run must not contain quotes or backslashes");
  const int64_t n = std::llround(rate * seconds);
  std::vector<Event> events(n);

  // Connect and prepare first, so t0 is not spent on connection setup.
  std::vector<PGconn*> conns;
  for (int w = 0; w < writers; ++w) {
    PGconn* c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      std::fprintf(stderr, "outbox-loadgen: cannot connect: %s",
                   PQerrorMessage(c));
      return 2;
    }
    PGresult* r = PQprepare(c, "ins", kInsert, 3, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      std::fprintf(stderr, "outbox-loadgen: cannot prepare the INSERT: %s",
                   PQerrorMessage(c));
      return 2;
    }
    PQclear(r);
    conns.push_back(c);
  }

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> rolled_back{0};
  std::atomic<int64_t> reconnects{0};
  std::mutex err_mu;
  std::string first_error;
  const double period_ns = 1e9 / rate;
  const int64_t t0 = now_ns() + 100'000'000;
  const int64_t cutoff = max_seconds > 0
                             ? t0 + static_cast<int64_t>(max_seconds * 1e9)
                             : INT64_MAX;

  // One statement on connection c; false (and the error kept) on failure.
  auto exec = [&](PGconn* c, const char* sql) {
    PGresult* r = PQexec(c, sql);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (first_error.empty()) first_error = PQerrorMessage(c);
    }
    return ok;
  };
  // --reconnect: reopens c until it works and the INSERT is prepared again;
  // false once stopped or past the cutoff.
  auto reopen = [&](PGconn* c) {
    for (;;) {
      if (g_stop || now_ns() > cutoff) return false;
      PQreset(c);
      if (PQstatus(c) == CONNECTION_OK) {
        PGresult* r = PQprepare(c, "ins", kInsert, 3, nullptr);
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (ok) {
          reconnects.fetch_add(1);
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  };
  auto writer = [&](PGconn* c, int w) {
    std::string payload, aggid;
    int64_t txns = 0, mine = 0;  // this writer's transactions and events
    for (;;) {
      if (g_stop) return;
      // A transaction: events first..last, started when the last is due.
      const int64_t first = next.fetch_add(per_txn, std::memory_order_relaxed);
      if (first >= n) return;
      const int64_t last = std::min<int64_t>(first + per_txn, n) - 1;
      for (int64_t i = first; i <= last; ++i) {
        events[i].sched_ns =
            t0 + static_cast<int64_t>(std::llround(i * period_ns));
      }
      sleep_until(events[last].sched_ns);
      if (now_ns() > cutoff) return;  // unsent, and so is every later event
      ++txns;
      const bool rollback = rollback_every > 0 && txns % rollback_every == 0;
      bool ok = !txn_block || exec(c, "BEGIN");
      for (int64_t i = first; ok && i <= last; ++i) {
        Event& e = events[i];
        e.sent_ns = now_ns();
        aggid = keys > 0 ? "w" + std::to_string(w) + "-k" +
                               std::to_string(mine++ % keys)
                         : std::to_string(i % 10000);
        // ~350 bytes as jsonb text, like bench/run.py's backlog rows.
        payload = "{\"run\": \"" + run + "\", \"seq\": " + std::to_string(i) +
                  ", \"sched_ns\": " + std::to_string(e.sched_ns) +
                  ", \"sent_ns\": " + std::to_string(e.sent_ns) +
                  ", \"customer\": \"customer-" + std::to_string(i % 977) +
                  "\", \"lines\": [{\"sku\": \"SKU-" + std::to_string(i % 50) +
                  "\", \"qty\": " + std::to_string(1 + i % 5) +
                  "}], \"note\": \"" + std::string(180, 'x') + "\"}";
        const char* params[3] = {aggregatetype.c_str(), aggid.c_str(),
                                 payload.c_str()};
        PGresult* r = PQexecPrepared(c, "ins", 3, params, nullptr, nullptr, 0);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (first_error.empty()) first_error = PQerrorMessage(c);
        }
      }
      if (ok && txn_block) ok = exec(c, rollback ? "ROLLBACK" : "COMMIT");
      const int64_t ack = now_ns();
      for (int64_t i = first; i <= last; ++i) {
        events[i].ack_ns = ack;
        events[i].ok = ok && !rollback;
      }
      if (ok && rollback) rolled_back.fetch_add(last - first + 1);
      if (!ok) {
        errors.fetch_add(last - first + 1);
        if (PQstatus(c) != CONNECTION_OK) {
          if (!reconnect || !reopen(c)) return;  // others carry on
        } else if (txn_block) {
          exec(c, "ROLLBACK");
        }
      }
    }
  };
  signal(SIGTERM, on_stop);
  signal(SIGINT, on_stop);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) threads.emplace_back(writer, conns[w], w);
  for (auto& t : threads) t.join();
  for (PGconn* c : conns) PQfinish(c);

  // Events no writer reached (all connections lost) stay ok=false.
  std::vector<int64_t> late, commit;
  int64_t last_ack = t0, unsent = 0;
  for (const Event& e : events) {
    unsent += e.sent_ns == 0 && e.ack_ns == 0;  // no writer took it
    if (!e.ok) continue;
    late.push_back(e.sent_ns - e.sched_ns);
    commit.push_back(e.ack_ns - e.sent_ns);
    last_ack = std::max(last_ack, e.ack_ns);
  }
  const int64_t committed = static_cast<int64_t>(late.size());
  if (!out.empty()) {
    const std::string tmp = out + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "outbox-loadgen: cannot write %s: %s\n", tmp.c_str(),
                   std::strerror(errno));
      return 2;
    }
    std::fprintf(f, "seq,sched_ns,sent_ns,ack_ns,ok\n");
    for (int64_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      std::fprintf(f, "%lld,%lld,%lld,%lld,%d\n", static_cast<long long>(i),
                   static_cast<long long>(e.sched_ns),
                   static_cast<long long>(e.sent_ns),
                   static_cast<long long>(e.ack_ns), e.ok ? 1 : 0);
    }
    if (std::fclose(f) != 0 || std::rename(tmp.c_str(), out.c_str()) != 0) {
      std::fprintf(stderr, "outbox-loadgen: cannot write %s: %s\n", out.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  const double span_s = (last_ack - t0) / 1e9;
  std::printf(
      "{\"run\": \"%s\", \"events\": %lld, \"committed\": %lld, "
      "\"unsent\": %lld, \"errors\": %lld, \"rolled_back\": %lld, "
      "\"reconnects\": %lld, \"late_p50_ms\": %.3f, "
      "\"late_p99_ms\": %.3f, \"late_max_ms\": %.3f, \"commit_p50_ms\": %.3f, "
      "\"commit_p99_ms\": %.3f, \"commit_max_ms\": %.3f, \"commit_rate\": "
      "%.1f}\n",
      run.c_str(), static_cast<long long>(n), static_cast<long long>(committed),
      static_cast<long long>(unsent), static_cast<long long>(errors.load()),
      static_cast<long long>(rolled_back.load()),
      static_cast<long long>(reconnects.load()), pct_ms(late, 50),
      pct_ms(late, 99), pct_ms(late, 100), pct_ms(commit, 50),
      pct_ms(commit, 99), pct_ms(commit, 100),
      span_s > 0 ? committed / span_s : 0.0);
  const int64_t failed = n - committed - unsent - rolled_back.load();
  if (failed > 0) {
    std::fprintf(
        stderr, "outbox-loadgen: %lld of %lld inserts failed%s: %s",
        static_cast<long long>(failed), static_cast<long long>(n),
        reconnect ? " (reconnected)" : "",
        first_error.empty() ? "all connections lost\n" : first_error.c_str());
    if (!reconnect) return 1;
  }
  return 0;
}
