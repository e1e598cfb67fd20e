// outbox-latency-consumer: the consumer side of the steady-load latency
// benchmark (issue 5, bench/latency.py), paired with outbox-loadgen.
//
//   outbox-latency-consumer --brokers B --topic T[,T2] --run TAG --expect N
//       [--from end|beginning] [--commits FILE] [--out FILE]
//       [--idle-timeout S] [--max-seconds S]
//       [--isolation read_committed|read_uncommitted] [--set KEY=VALUE]...
//
// Assigns every partition of the topics (no consumer group, no commits) at
// their current end (the high watermark, looked up before "ready" is printed,
// so nothing produced after "ready" is missed) or their beginning. For each
// record it takes the arrival time (CLOCK_REALTIME) and reads "run", "seq",
// "sched_ns" and "sent_ns" from the JSON value that outbox-loadgen wrote;
// records of another run are ignored. It stops when all N events of the run
// arrived, when none arrived for --idle-timeout seconds (default 30), or after
// --max-seconds (default: none).
//
// --commits FILE is outbox-loadgen's --out: the commit-ack time per event,
// read as soon as the file appears (or waited for up to --idle-timeout once
// consuming ends). Events it failed to insert or send are not expected.
//
// stdout: "ready" once assigned, then one JSON line: expected, received,
// missing, duplicates, foreign (other runs), sustained throughput (events per
// second between the first and last arrival), and p50/p99/p99.9/max in ms of
// the latency from the scheduled time, from the send and from the commit ack.
// --out writes seq,sched_ns,sent_ns,ack_ns,arrival_ns,kafka_ts_ms per
// received event (kafka_ts_ms: the record's timestamp, for outbox-relay the
// moment it was produced; a diagnostic, not in the summary).
// --isolation sets isolation.level (default read_committed, librdkafka's own
// default): with read_committed a record becomes visible only once its Kafka
// transaction commits (outbox-relay with kafka.exactly_once), which is the
// latency such a consumer sees; for a non-transactional producer both levels
// read the same records at the same time.
// --set (repeatable) sets a librdkafka consumer property after the
// defaults (fetch.wait.max.ms=5, fetch.min.bytes=1,
// fetch.error.backoff.ms=5), to measure the consumer's share of the time.
// Exit 0 when every expected event arrived, 1 when some are missing, 2 on
// bad arguments or a Kafka setup error.

#include <librdkafka/rdkafka.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void die(int code, const std::string& msg) {
  std::fprintf(stderr, "outbox-latency-consumer: %s\n", msg.c_str());
  std::exit(code);
}

// The position just after "key": (whitespace allowed around the colon), or
// npos; `quoted` includes the quotes. Good enough for the flat payloads
// outbox-loadgen writes, whichever way the relay re-serialises them (jsonb
// text, compact JSON).
size_t value_pos(std::string_view s, std::string_view quoted) {
  size_t p = s.find(quoted);
  if (p == std::string_view::npos) return p;
  p += quoted.size();
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n')) ++p;
  if (p >= s.size() || s[p] != ':') return std::string_view::npos;
  ++p;
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n')) ++p;
  return p;
}

bool int_field(std::string_view s, std::string_view key, int64_t* out) {
  size_t p = value_pos(s, key);
  if (p == std::string_view::npos || p >= s.size()) return false;
  int64_t v = 0;
  size_t q = p;
  while (q < s.size() && s[q] >= '0' && s[q] <= '9')
    v = v * 10 + (s[q++] - '0');
  if (q == p) return false;
  *out = v;
  return true;
}

bool string_field(std::string_view s, std::string_view key,
                  std::string_view* out) {
  size_t p = value_pos(s, key);
  if (p == std::string_view::npos || p >= s.size() || s[p] != '"') return false;
  size_t q = s.find('"', p + 1);
  if (q == std::string_view::npos) return false;
  *out = s.substr(p + 1, q - p - 1);
  return true;
}

struct Stats {
  double p50 = 0, p99 = 0, p999 = 0, max = 0;
};

Stats stats(std::vector<int64_t> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p / 100 * v.size()));
    return v[std::clamp<size_t>(k, 1, v.size()) - 1] / 1e6;
  };
  s.p50 = at(50);
  s.p99 = at(99);
  s.p999 = at(99.9);
  s.max = v.back() / 1e6;
  return s;
}

std::string json(const Stats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{\"p50\": %.3f, \"p99\": %.3f, \"p999\": %.3f, \"max\": %.3f}",
                s.p50, s.p99, s.p999, s.max);
  return buf;
}

struct Arrival {
  int64_t sched_ns = 0, sent_ns = 0, ack_ns = 0, arrival_ns = 0;
  int64_t kafka_ts_ms = -1;  // the record's timestamp (producer CreateTime)
};

volatile std::sig_atomic_t stop_requested = 0;

}  // namespace

int main(int argc, char** argv) {
  std::string brokers, topics, run, from = "end", commits, out;
  std::string isolation = "read_committed";
  std::vector<std::pair<std::string, std::string>> sets;
  int64_t expect = -1;
  double idle_timeout = 30, max_seconds = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) die(2, "missing value for " + a);
    const char* v = argv[++i];
    if (a == "--brokers") {
      brokers = v;
    } else if (a == "--topic") {
      topics = v;
    } else if (a == "--run") {
      run = v;
    } else if (a == "--expect") {
      expect = std::atoll(v);
    } else if (a == "--from") {
      from = v;
    } else if (a == "--commits") {
      commits = v;
    } else if (a == "--out") {
      out = v;
    } else if (a == "--idle-timeout") {
      idle_timeout = std::atof(v);
    } else if (a == "--max-seconds") {
      max_seconds = std::atof(v);
    } else if (a == "--isolation") {
      isolation = v;
    } else if (a == "--set") {
      const char* eq = std::strchr(v, '=');
      if (eq == nullptr || eq == v)
        die(2, "--set wants KEY=VALUE, not " + std::string(v));
      sets.emplace_back(std::string(v, eq), std::string(eq + 1));
    } else {
      die(2, "unknown argument " + a);
    }
  }
  if (brokers.empty() || topics.empty() || run.empty() || expect <= 0)
    die(2,
        "usage: outbox-latency-consumer --brokers B --topic T[,T2] --run TAG "
        "--expect N [--from end|beginning] [--commits FILE] [--out FILE] "
        "[--idle-timeout S] [--max-seconds S] "
        "[--isolation read_committed|read_uncommitted] [--set KEY=VALUE]...");
  if (from != "end" && from != "beginning")
    die(2, "--from must be end or beginning");
  if (isolation != "read_committed" && isolation != "read_uncommitted")
    die(2, "--isolation must be read_committed or read_uncommitted");

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) !=
        RD_KAFKA_CONF_OK)
      die(2, std::string(k) + ": " + err);
  };
  set("bootstrap.servers", brokers);
  set("group.id", "outbox-latency-consumer");  // required; never joined
  set("enable.auto.commit", "false");
  set("enable.auto.offset.store", "false");
  set("fetch.wait.max.ms", "5");
  set("fetch.min.bytes", "1");
  set("fetch.error.backoff.ms", "5");
  set("isolation.level", isolation);
  for (const auto& [k, v] : sets) set(k.c_str(), v);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) die(2, std::string("cannot create the consumer: ") + err);
  rd_kafka_poll_set_consumer(rk);

  // Every partition of every topic, at an explicit offset.
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(8);
  for (size_t b = 0; b <= topics.size();) {
    size_t e = topics.find(',', b);
    if (e == std::string::npos) e = topics.size();
    const std::string t = topics.substr(b, e - b);
    b = e + 1;
    if (t.empty()) continue;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, t.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t rc = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
    if (rc != RD_KAFKA_RESP_ERR_NO_ERROR)
      die(2, "metadata of " + t + ": " + rd_kafka_err2str(rc));
    if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR ||
        md->topics[0].partition_cnt == 0)
      die(2, "topic " + t + " does not exist (create it first)");
    for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
      const int32_t id = md->topics[0].partitions[p].id;
      int64_t lo = 0, hi = 0;
      rc = rd_kafka_query_watermark_offsets(rk, t.c_str(), id, &lo, &hi, 10000);
      if (rc != RD_KAFKA_RESP_ERR_NO_ERROR)
        die(2, "offsets of " + t + ": " + rd_kafka_err2str(rc));
      rd_kafka_topic_partition_list_add(parts, t.c_str(), id)->offset =
          from == "end" ? hi : lo;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
  }
  if (rd_kafka_resp_err_t rc = rd_kafka_assign(rk, parts))
    die(2, std::string("assign: ") + rd_kafka_err2str(rc));
  rd_kafka_topic_partition_list_destroy(parts);
  std::signal(SIGTERM, [](int) { stop_requested = 1; });
  std::signal(SIGINT, [](int) { stop_requested = 1; });
  std::printf("ready\n");
  std::fflush(stdout);

  std::vector<Arrival> arr(expect);
  // Commit-ack times from outbox-loadgen's file, read as soon as it appears
  // (the writer renames it into place when complete): events it could not
  // insert or send are not expected, so the wait ends without a timeout.
  std::vector<int64_t> acks;
  int64_t expected = expect;
  auto load_commits = [&]() {
    FILE* f = std::fopen(commits.c_str(), "r");
    if (f == nullptr) return false;
    acks.assign(expect, 0);
    expected = 0;
    char line[256];
    if (std::fgets(line, sizeof line, f) == nullptr) line[0] = 0;  // header
    long long seq, sched, sent, ack;
    int ok;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "%lld,%lld,%lld,%lld,%d", &seq, &sched, &sent, &ack,
                      &ok) == 5 &&
          seq >= 0 && seq < expect && ok) {
        acks[seq] = ack;
        ++expected;
      }
    }
    std::fclose(f);
    return true;
  };
  int64_t received = 0, duplicates = 0, foreign = 0, bad = 0;
  int64_t first_arrival = 0, last_arrival = 0;
  const int64_t start = now_ns();
  int64_t last_progress = start, last_look = start;
  bool timed_out = false;
  while (received < expected && !stop_requested) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    const int64_t now = now_ns();
    if (m != nullptr) {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::string_view v(static_cast<const char*>(m->payload), m->len);
        std::string_view r;
        int64_t seq = -1, sched = 0, sent = 0;
        if (!string_field(v, "\"run\"", &r) || r != run) {
          ++foreign;
        } else if (!int_field(v, "\"seq\"", &seq) ||
                   !int_field(v, "\"sched_ns\"", &sched) ||
                   !int_field(v, "\"sent_ns\"", &sent) || seq >= expect) {
          ++bad;
        } else if (arr[seq].arrival_ns != 0) {
          ++duplicates;
        } else {
          arr[seq] = Arrival{sched, sent, 0, now,
                             rd_kafka_message_timestamp(m, nullptr)};
          if (received++ == 0) first_arrival = now;
          last_arrival = now;
          last_progress = now;
        }
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        std::fprintf(stderr, "outbox-latency-consumer: %s\n",
                     rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
    if (!commits.empty() && acks.empty() && now - last_look > 200'000'000) {
      last_look = now;
      load_commits();
    }
    if ((now - last_progress) / 1e9 > idle_timeout ||
        (max_seconds > 0 && (now - start) / 1e9 > max_seconds)) {
      timed_out = true;
      break;
    }
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (!commits.empty() && acks.empty()) {
    const int64_t deadline =
        now_ns() + static_cast<int64_t>(idle_timeout * 1e9);
    while (!load_commits() && now_ns() < deadline) usleep(50'000);
    if (acks.empty())
      die(2, "no commit times in " + commits + ": " + std::strerror(errno));
  }
  for (int64_t i = 0; i < static_cast<int64_t>(acks.size()); ++i)
    arr[i].ack_ns = acks[i];

  std::vector<int64_t> from_sched, from_sent, from_commit;
  from_sched.reserve(received);
  from_sent.reserve(received);
  from_commit.reserve(received);
  FILE* o = nullptr;
  if (!out.empty()) {
    o = std::fopen(out.c_str(), "w");
    if (o == nullptr)
      die(2, "cannot write " + out + ": " + std::strerror(errno));
    std::fprintf(o, "seq,sched_ns,sent_ns,ack_ns,arrival_ns,kafka_ts_ms\n");
  }
  for (int64_t i = 0; i < expect; ++i) {
    const Arrival& a = arr[i];
    if (a.arrival_ns == 0) continue;
    from_sched.push_back(a.arrival_ns - a.sched_ns);
    from_sent.push_back(a.arrival_ns - a.sent_ns);
    if (a.ack_ns != 0) from_commit.push_back(a.arrival_ns - a.ack_ns);
    if (o != nullptr)
      std::fprintf(
          o, "%lld,%lld,%lld,%lld,%lld,%lld\n", static_cast<long long>(i),
          static_cast<long long>(a.sched_ns), static_cast<long long>(a.sent_ns),
          static_cast<long long>(a.ack_ns),
          static_cast<long long>(a.arrival_ns),
          static_cast<long long>(a.kafka_ts_ms));
  }
  if (o != nullptr) std::fclose(o);
  const double span_s = (last_arrival - first_arrival) / 1e9;
  std::printf(
      "{\"run\": \"%s\", \"expected\": %lld, \"received\": %lld, \"missing\": "
      "%lld, \"duplicates\": %lld, \"foreign\": %lld, \"unreadable\": %lld, "
      "\"timed_out\": %s, \"sustained_eps\": %.1f, \"from_sched\": %s, "
      "\"from_sent\": %s, \"from_commit\": %s}\n",
      run.c_str(), static_cast<long long>(expected),
      static_cast<long long>(received),
      static_cast<long long>(std::max<int64_t>(0, expected - received)),
      static_cast<long long>(duplicates), static_cast<long long>(foreign),
      static_cast<long long>(bad), timed_out ? "true" : "false",
      received > 1 && span_s > 0 ? (received - 1) / span_s : 0.0,
      json(stats(from_sched)).c_str(), json(stats(from_sent)).c_str(),
      acks.empty() ? "null" : json(stats(from_commit)).c_str());
  if (received < expected) {
    std::fprintf(stderr,
                 "outbox-latency-consumer: %lld of %lld events of run %s "
                 "missing%s\n",
                 static_cast<long long>(expected - received),
                 static_cast<long long>(expected), run.c_str(),
                 timed_out ? " (timed out)" : "");
    return 1;
  }
  return 0;
}
