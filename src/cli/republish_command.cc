#include "cli/republish_command.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audit/audit.h"
#include "audit/audit_sources.h"
#include "common/progress.h"
#include "daemon/exit_code.h"
#include "kafka/rdkafka_sink.h"
#include "outbox/clock.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"
#include "poller/outbox_row.h"
#include "poller/outbox_row_sql.h"
#include "relay/relay_config.h"
#include "route/router.h"

namespace outbox {
namespace {

constexpr size_t kExampleIds = 5;
// While records are outstanding, how long to wait for reports in one go.
constexpr int kPollMs = 100;

struct TableRows {
  TableShape shape;
  std::vector<OutboxRow> rows;
};

// The rows in range, and one CommittedEvent per row (seq: its position in
// reading order, which is creation order within each table) with where it
// is: rows_at[i] = {table, row}.
struct RowsInRange {
  std::vector<TableRows> tables;
  std::vector<CommittedEvent> events;
  std::vector<std::pair<size_t, size_t>> rows_at;
  std::vector<std::string> not_kept;  // NotKept's lines
};

absl::StatusOr<RowsInRange> ReadRows(PgConnection* db, const Config& config,
                                     const Router& router,
                                     const RowSelection& selection) {
  RowsInRange out;
  std::set<std::string> found;
  std::vector<std::map<std::string, std::string>> all_types;
  const std::vector<Router::TableColumns> required = router.RequiredColumns();
  for (size_t t = 0; t < required.size(); ++t) {
    const Router::TableColumns& table = required[t];
    const OutboxTable& mapping = config.outbox.tables.at(t);
    ASSIGN_OR_RETURN(ColumnTypeMap types, ColumnTypes(db, mapping));
    ASSIGN_OR_RETURN(TableShape shape,
                     ShapeOf(table.schema, table.table, table.columns, types));
    size_t id_column = 0;
    while (id_column < shape.columns.size() &&
           shape.columns[id_column].name != mapping.columns.id) {
      ++id_column;
    }
    if (id_column == shape.columns.size()) {
      return absl::InternalError("the id column is not among the mapped ones");
    }
    ASSIGN_OR_RETURN(TableRowsSql sql,
                     SelectRows(*db, mapping, types, selection));
    ASSIGN_OR_RETURN(
        PgResult res,
        db->QueryParams(
            absl::StrCat("SELECT ", MappedColumnsSelectList(*db, shape),
                         sql.from_where, sql.order_by),
            sql.params));
    TableRows rows{std::move(shape), {}};
    rows.rows.resize(PgConnection::Rows(res));
    for (int i = 0; i < PgConnection::Rows(res); ++i) {
      OutboxRow& row = rows.rows[i];
      absl::Status s = DecodeMappedColumns(rows.shape, res.get(), i, 0, &row);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat(rows.shape.QualifiedName(), ": ", s.message()));
      }
      out.events.push_back(
          {row.values[id_column], "", static_cast<int64_t>(out.events.size())});
      out.rows_at.emplace_back(t, i);
      found.insert(row.values[id_column]);
    }
    out.tables.push_back(std::move(rows));
    all_types.push_back(std::move(types));
  }
  ASSIGN_OR_RETURN(out.not_kept,
                   NotKept(db, config, all_types, selection, found));
  return out;
}

// Every topic an event of these tables can be in: the routing's topics
// (RoutedTopicPatterns), and the dead-letter topic when the relay
// dead-letters.
absl::StatusOr<std::vector<std::string>> TopicPatterns(const Config& config) {
  ASSIGN_OR_RETURN(std::vector<std::string> patterns,
                   RoutedTopicPatterns(config, "outbox-relay republish"));
  if (config.outbox.on_invalid == OnInvalid::kDeadLetter) {
    patterns.push_back(TopicPattern(config.outbox.dead_letter_topic));
  }
  return patterns;
}

struct Outcome {
  int64_t delivered = 0;
  int64_t failed = 0;
  std::string first_error;  // "<id>: <why>"

  void Fail(absl::string_view id, absl::string_view why) {
    if (failed++ == 0) first_error = absl::StrCat(id, ": ", why);
  }
};

// Produces the events at `missing` in order and waits for every report,
// drawing a progress meter on `progress` unless it is null.
Outcome Produce(const Config& config, const RowsInRange& rows,
                const std::vector<size_t>& missing, const Router& router,
                FILE* progress) {
  Outcome outcome;
  Progress meter(progress, progress != nullptr, "re-publishing", "events",
                 static_cast<int64_t>(missing.size()));
  auto reported = [&] { return outcome.delivered + outcome.failed; };
  absl::StatusOr<std::unique_ptr<RdKafkaSink>> created =
      RdKafkaSink::Create(RelayKafkaOptions(config));
  if (!created.ok()) {
    for (size_t i : missing) {
      outcome.Fail(rows.events[i].id, created.status().message());
    }
    return outcome;
  }
  RdKafkaSink& sink = **created;
  sink.SetDeliveryHandler([&](const DeliveryReport& report) {
    if (report.status.ok()) {
      ++outcome.delivered;
    } else {
      outcome.Fail(rows.events[report.ticket].id, report.status.message());
    }
  });
  Change change;
  Record record;
  for (size_t i : missing) {
    const auto [t, r] = rows.rows_at[i];
    ToChange(rows.tables[t].shape, rows.tables[t].rows[r], &change);
    absl::Status s = router.Route(change, &record);
    const int64_t give_up_us =
        RealClock()->NowMicros() + config.kafka.flush_timeout_ms * 1000;
    while (s.ok()) {
      s = sink.Produce(record, i);
      if (!absl::IsResourceExhausted(s) && !absl::IsUnavailable(s)) break;
      if (RealClock()->NowMicros() > give_up_us) break;
      sink.Poll(kPollMs);  // a full queue or a topic not known yet
    }
    if (!s.ok()) outcome.Fail(rows.events[i].id, s.message());
    sink.Poll(0);
    meter.Update(reported());
  }
  // Every report, as long as they keep coming: a round of
  // kafka.flush_timeout_ms without one gives up on the rest.
  int64_t before = sink.outstanding() + 1;
  while (sink.outstanding() > 0 && sink.outstanding() < before) {
    before = sink.outstanding();
    sink.Flush(static_cast<int>(config.kafka.flush_timeout_ms)).IgnoreError();
    meter.Update(reported());
  }
  if (sink.outstanding() > 0) {
    const int64_t lost = sink.outstanding();
    outcome.failed += lost;
    if (outcome.first_error.empty()) {
      outcome.first_error = absl::StrCat(
          lost, " records had no delivery report within ",
          config.kafka.flush_timeout_ms, " ms (kafka.flush_timeout_ms)");
    }
  }
  meter.Finish(reported());
  return outcome;
}

int ExitCodeFor(const absl::Status& status) {
  if (absl::IsInvalidArgument(status)) return kExitUsage;
  if (absl::IsFailedPrecondition(status)) return kExitPrecondition;
  return kExitInternal;
}

}  // namespace

int RunRepublishCommand(const Config& config, const CommandLine::Rows& selected,
                        const CommandLine::Republish& options, FILE* out,
                        FILE* err) {
  auto fail = [&](const absl::Status& status) {
    fprintf(err, "outbox-relay republish: %s\n",
            std::string(status.message()).c_str());
    return ExitCodeFor(status);
  };
  if (absl::Status s = RequireOutboxTables(
          config, "republish produces the outbox tables' rows again");
      !s.ok()) {
    return fail(s);
  }
  absl::StatusOr<std::unique_ptr<Router>> router = Router::Create(config);
  if (!router.ok()) return fail(router.status());
  PgConnectOptions connect;
  connect.conninfo = config.postgres.conninfo;
  connect.application_name = "outbox-relay republish";
  connect.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  connect.settings = kOutboxRowSettings;
  absl::StatusOr<std::unique_ptr<PgConnection>> db =
      PgConnection::Connect(connect);
  if (!db.ok()) return fail(db.status());

  absl::StatusOr<RowSelection> selection = ResolveRows(db->get(), selected);
  if (!selection.ok()) return fail(selection.status());
  const std::string range = selection->Describe(config);
  // The tables before the topics: see the header.
  absl::StatusOr<RowsInRange> rows =
      ReadRows(db->get(), config, **router, *selection);
  if (!rows.ok()) return fail(rows.status());
  db->reset();
  // Progress meters on a terminal only: logs and pipes stay quiet.
  FILE* progress = Progress::IsTerminal(err) ? err : nullptr;
  absl::StatusOr<std::vector<std::string>> patterns = TopicPatterns(config);
  if (!patterns.ok()) return fail(patterns.status());
  absl::StatusOr<std::vector<PublishedRecord>> records = ReadPublishedRecords(
      config, *patterns, options.timeout_s,
      /*read_committed=*/config.kafka.exactly_once, progress);
  if (!records.ok()) {
    return fail(absl::Status(
        records.status().code(),
        absl::StrCat("reading the topics back: ", records.status().message())));
  }
  const std::vector<size_t> missing = MissingEvents(rows->events, *records);

  const int64_t considered = static_cast<int64_t>(rows->events.size());
  const int64_t to_publish = static_cast<int64_t>(missing.size());
  fprintf(out, "range               %s\n", range.c_str());
  fprintf(out, "events considered   %lld\n",
          static_cast<long long>(considered));
  fprintf(out, "already in Kafka    %lld\n",
          static_cast<long long>(considered - to_publish));
  // What the tables no longer hold: after the counts, and exit 3 once the
  // rest is done.
  auto not_kept = [&](int code) {
    fflush(out);
    for (const std::string& line : rows->not_kept) {
      fprintf(err, "outbox-relay republish: %s\n", line.c_str());
    }
    return code == kExitOk && !rows->not_kept.empty() ? kExitPrecondition
                                                      : code;
  };
  if (options.dry_run) {
    std::vector<absl::string_view> ids;
    for (size_t i = 0; i < missing.size() && i < kExampleIds; ++i) {
      ids.push_back(rows->events[missing[i]].id);
    }
    fprintf(out, "would re-publish    %lld%s%s\n",
            static_cast<long long>(to_publish), ids.empty() ? "" : ": ",
            absl::StrCat(absl::StrJoin(ids, ", "),
                         missing.size() > ids.size() ? ", ..." : "")
                .c_str());
    return not_kept(kExitOk);
  }
  Outcome outcome = Produce(config, *rows, missing, **router, progress);
  fprintf(out, "re-published        %lld\n",
          static_cast<long long>(outcome.delivered));
  fprintf(out, "failed              %lld\n",
          static_cast<long long>(outcome.failed));
  fflush(out);
  if (outcome.failed > 0 || outcome.delivered != to_publish) {
    fprintf(err,
            "outbox-relay republish: %lld of %lld missing events were not "
            "delivered (first: %s); run it again, consumers de-duplicate on "
            "the id header\n",
            static_cast<long long>(to_publish - outcome.delivered),
            static_cast<long long>(to_publish), outcome.first_error.c_str());
    return not_kept(kExitInternal);
  }
  return not_kept(kExitOk);
}

}  // namespace outbox
