// stage_cost: the CPU cost of each stage of the relay's pipeline, measured
// alone, to show what bounds the relay's CPU per event (bench/RESULTS.md).
//
//   stage_cost recv --pg CONNINFO --slot S --end LSN
//                   [--plugin wal2json|pgoutput] [--decode] [--route]
//       Streams the slot with the relay's own LibpqReplicationStream and
//       output plugin (default wal2json format-version 2; pgoutput streams
//       the publication outbox_relay, which must exist; the relay's options
//       and its read coalescing) until a record at or past LSN arrives (the
//       backlog must be followed by another transaction with an outbox row:
//       pgoutput sends nothing for a transaction without one); with
//       --decode also decodes every message with the plugin's decoder, with
//       --route also routes every insert to a Record. Never confirms, so the
//       slot can be read again and again.
//   stage_cost produce --kafka BROKERS --events N [--topic T]
//                      [--value-bytes B] [--window W] [--prop k=v]...
//                      [--no-header]
//       Produces N records shaped like the relay's (key of a few bytes, a
//       B-byte value, the "id" header) through the relay's RdKafkaSink with
//       its defaults, at most W unacknowledged at a time, until all are
//       acknowledged.
//
// Prints one line: stage, events, wall seconds, CPU seconds of the whole
// process (all threads, getrusage) and CPU microseconds per event.
#include <poll.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/lsn.h"
#include "pg/libpq_replication_stream.h"
#include "plugin/output_plugin.h"
#include "route/router.h"

namespace outbox {
namespace {

double CpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "stage_cost: %s\n", what.c_str());
  exit(1);
}

const char* Arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  if (def == nullptr) Die(absl::StrCat("missing ", name));
  return def;
}

bool Flag(int argc, char** argv, const char* name) {
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

void Report(const char* stage, int64_t events, double wall, double cpu) {
  printf("%s events=%lld wall_s=%.3f cpu_s=%.3f cpu_us_per_event=%.3f\n", stage,
         static_cast<long long>(events), wall, cpu,
         events > 0 ? cpu * 1e6 / static_cast<double>(events) : 0.0);
}

int Recv(int argc, char** argv) {
  bool decode = Flag(argc, argv, "--decode");
  bool route = Flag(argc, argv, "--route");
  absl::StatusOr<Lsn> end = ParseLsn(Arg(argc, argv, "--end", nullptr));
  if (!end.ok()) Die("bad --end");
  Config config;
  ReplicationOptions options;
  options.conninfo = Arg(argc, argv, "--pg", nullptr);
  options.slot = Arg(argc, argv, "--slot", nullptr);
  options.create_slot = false;
  options.tables.push_back({"public", "outbox", {}});
  PluginOptions plugin_options;
  plugin_options.tables.push_back({"public", "outbox"});
  plugin_options.create_publication = false;
  auto plugin = OutputPlugin::Create(Arg(argc, argv, "--plugin", "wal2json"),
                                     plugin_options);
  if (!plugin.ok()) Die(std::string(plugin.status().message()));
  options.plugin = plugin->get();
  auto stream = LibpqReplicationStream::Connect(options);
  if (!stream.ok()) Die(std::string(stream.status().message()));
  auto router = Router::Create(config);
  if (!router.ok()) Die(std::string(router.status().message()));
  std::unique_ptr<Decoder> decoder = (*plugin)->NewDecoder();
  Change change;
  Record record;
  double wall0 = Now(), cpu0 = CpuSeconds();
  if (absl::Status s = (*stream)->Start(kInvalidLsn); !s.ok()) {
    Die(std::string(s.message()));
  }
  int64_t inserts = 0, messages = 0;
  StreamMessage msg;
  for (bool done = false; !done;) {
    int n = 0;
    for (;;) {
      absl::StatusOr<bool> got = (*stream)->Read(&msg);
      if (!got.ok()) Die(std::string(got.status().message()));
      if (!*got) break;
      ++n;
      if (msg.type == StreamMessage::Type::kKeepalive) {
        if (msg.reply_requested) {
          (*stream)->SendStatus(msg.wal_end, kInvalidLsn, false).IgnoreError();
        }
        continue;
      }
      ++messages;
      if (msg.data_start >= *end) done = true;
      if (!decode) continue;
      if (absl::Status s = decoder->Decode(msg.payload, &change); !s.ok()) {
        Die(std::string(s.message()));
      }
      if (change.kind != Change::Kind::kInsert) continue;
      ++inserts;
      if (route) {
        if (absl::Status s = (*router)->Route(change, &record); !s.ok()) {
          Die(std::string(s.message()));
        }
      }
    }
    if (done) break;
    // The relay's wait: coalesce 1 ms after a busy pass.
    pollfd fd = {(*stream)->socket(), POLLIN, 0};
    timespec t = {0, 1'000'000};
    ppoll(n >= 16 ? nullptr : &fd, n >= 16 ? 0 : 1, n >= 16 ? &t : nullptr,
          nullptr);
  }
  double wall = Now() - wall0, cpu = CpuSeconds() - cpu0;
  const char* stage = route    ? "recv+decode+route"
                      : decode ? "recv+decode"
                               : "recv";
  if (!decode) {
    printf("(messages=%lld)\n", static_cast<long long>(messages));
    inserts = std::atoll(Arg(argc, argv, "--events", "0"));
  }
  Report(stage, inserts, wall, cpu);
  return 0;
}

int Produce(int argc, char** argv) {
  int64_t events = std::atoll(Arg(argc, argv, "--events", "200000"));
  int64_t window = std::atoll(Arg(argc, argv, "--window", "10000"));
  size_t value_bytes = std::atoi(Arg(argc, argv, "--value-bytes", "370"));
  KafkaOptions options;
  options.brokers = Arg(argc, argv, "--kafka", nullptr);
  for (int i = 2; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--prop") != 0) continue;
    const char* eq = strchr(argv[i + 1], '=');
    if (eq == nullptr) Die("--prop wants key=value");
    options.properties[std::string(argv[i + 1], eq - argv[i + 1])] = eq + 1;
  }
  bool headers = !Flag(argc, argv, "--no-header");
  auto sink = RdKafkaSink::Create(options);
  if (!sink.ok()) Die(std::string(sink.status().message()));
  int64_t delivered = 0, failed = 0;
  (*sink)->SetDeliveryHandler([&](const DeliveryReport& r) {
    ++delivered;
    if (!r.status.ok()) ++failed;
  });
  std::string value(value_bytes, 'x');
  std::string id = "0007441b-3601-4bb8-803d-3d0514cbd276";
  Record record;
  record.topic = Arg(argc, argv, "--topic", "outbox.stage_cost");
  if (headers) record.headers.push_back({"id", id, false});
  double wall0 = Now(), cpu0 = CpuSeconds();
  for (int64_t i = 0; i < events; ++i) {
    std::string key = std::to_string(i % 10000);
    record.key = key;
    record.value = value;
    while ((*sink)->outstanding() >= window) (*sink)->Poll(100);
    for (;;) {
      absl::Status s = (*sink)->Produce(record, static_cast<uint64_t>(i + 1));
      if (s.ok()) break;
      if (!absl::IsResourceExhausted(s)) Die(std::string(s.message()));
      (*sink)->Poll(10);
    }
    (*sink)->Poll(0);
  }
  if (absl::Status s = (*sink)->Flush(60000); !s.ok()) {
    Die(std::string(s.message()));
  }
  double wall = Now() - wall0, cpu = CpuSeconds() - cpu0;
  if (failed > 0 || delivered != events) {
    Die(absl::StrCat(failed, " failed deliveries, ", delivered, " of ", events,
                     " reported"));
  }
  Report("produce", events, wall, cpu);
  return 0;
}

}  // namespace
}  // namespace outbox

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "recv") == 0) {
    return outbox::Recv(argc, argv);
  }
  if (argc >= 2 && strcmp(argv[1], "produce") == 0) {
    return outbox::Produce(argc, argv);
  }
  fprintf(stderr,
          "usage: stage_cost recv --pg CONNINFO --slot S --end LSN "
          "[--plugin wal2json|pgoutput] [--decode] [--route] [--events N]\n"
          "       stage_cost produce --kafka BROKERS --events N [--topic T] "
          "[--value-bytes B] [--window W] [--prop k=v]... [--no-header]\n");
  return 2;
}
