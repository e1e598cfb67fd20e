#include "audit/audit_sources.h"

#include <librdkafka/rdkafka.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/progress.h"
#include "kafka/checkpoint_reader.h"
#include "kafka/kafka_refusal.h"
#include "kafka/rdkafka_log.h"
#include "outbox/status_macros.h"
#include "pg/pg_connection.h"
#include "poller/outbox_row_sql.h"
#include "route/topic_regex.h"

namespace outbox {

namespace {

constexpr char kRetentionDoc[] =
    "docs/operations/republish.md#insert-then-delete-outboxes";

bool IsInteger(const std::string& type) {
  return type == "bigint" || type == "integer" || type == "smallint";
}

// The first table's name of a column, or the configured key's when the
// tables name it differently.
std::string ColumnName(const Config& config, std::string OutboxColumns::*column,
                       absl::string_view key) {
  std::set<std::string> names;
  for (const OutboxTable& t : config.outbox.tables) {
    names.insert(t.columns.*column);
  }
  if (names.size() == 1) return *names.begin();
  return std::string(key);
}

// A PostgreSQL text[] literal of `values`.
std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// The server's reading of a --since/--until value, as text in UTC;
// InvalidArgument naming the flag when it cannot read it.
absl::StatusOr<std::string> ServerTime(PgConnection* db, const char* flag,
                                       const std::string& text) {
  absl::StatusOr<PgResult> res = db->QueryParams(
      "SELECT ($1::timestamptz AT TIME ZONE 'UTC')::text || '+00'", {text});
  if (!res.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", text, "\": ", res.status().message()));
  }
  return PgConnection::Value(*res, 0, 0);
}

// `column` (quoted) compared with the time parameter $n, for its type.
absl::StatusOr<std::string> TimeBound(const std::string& column,
                                      const std::string& type,
                                      absl::string_view op, int n) {
  if (type == "timestamp with time zone") {
    return absl::StrCat(column, " ", op, " $", n, "::timestamptz");
  }
  if (type == "timestamp without time zone") {
    return absl::StrCat(column, " ", op, " ($", n,
                        "::timestamptz AT TIME ZONE 'UTC')");
  }
  if (IsInteger(type)) {
    return absl::StrCat(column, " ", op, " (extract(epoch FROM $", n,
                        "::timestamptz) * 1000)::bigint");
  }
  return absl::FailedPreconditionError("");
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ColumnTypes(
    PgConnection* db, const OutboxTable& t) {
  ASSIGN_OR_RETURN(PgResult cols,
                   db->QueryParams(kColumnTypesSql, {t.schema, t.name}));
  std::map<std::string, std::string> types;
  for (int i = 0; i < PgConnection::Rows(cols); ++i) {
    types[PgConnection::Value(cols, i, 0)] = PgConnection::Value(cols, i, 1);
  }
  return types;
}

std::string RowSelection::Describe(const Config& config) const {
  switch (kind) {
    case Kind::kAll:
      return "every row";
    case Kind::kTime:
      return absl::StrCat(
          ColumnName(config, &OutboxColumns::time, "outbox.columns.time"),
          " >= ", since, until.empty() ? "" : absl::StrCat(" and < ", until));
    case Kind::kIds:
      return absl::StrCat(
          ids.size(), ids.size() == 1 ? " id" : " ids", " (",
          ColumnName(config, &OutboxColumns::id, "outbox.columns.id"), ")");
    case Kind::kSeq:
      return absl::StrCat(
          ColumnName(config, &OutboxColumns::seq, "outbox.columns.seq"),
          " >= ", seq_from,
          seq_to ? absl::StrCat(" and <= ", *seq_to) : std::string());
  }
  return "";
}

absl::StatusOr<RowSelection> ResolveRows(PgConnection* db,
                                         const CommandLine::Rows& rows) {
  RowSelection out;
  if (!rows.since.empty()) {
    out.kind = RowSelection::Kind::kTime;
    ASSIGN_OR_RETURN(out.since, ServerTime(db, "--since", rows.since));
    if (!rows.until.empty()) {
      ASSIGN_OR_RETURN(out.until, ServerTime(db, "--until", rows.until));
    }
  } else if (rows.seq_from) {
    out.kind = RowSelection::Kind::kSeq;
    out.seq_from = *rows.seq_from;
    out.seq_to = rows.seq_to;
  } else if (!rows.ids.empty() || !rows.ids_file.empty()) {
    out.kind = RowSelection::Kind::kIds;
    std::vector<std::string> ids = rows.ids;
    if (!rows.ids_file.empty()) {
      std::stringstream text;
      if (rows.ids_file == "-") {
        text << std::cin.rdbuf();
      } else {
        std::ifstream file(rows.ids_file, std::ios::binary);
        if (!file) {
          return absl::InvalidArgumentError(
              absl::StrCat("--ids-file ", rows.ids_file,
                           ": cannot read it: ", std::strerror(errno)));
        }
        text << file.rdbuf();
      }
      for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
        line = absl::StripAsciiWhitespace(line);
        if (!line.empty() && line[0] != '#') ids.emplace_back(line);
      }
      if (ids.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--ids-file ", rows.ids_file, " lists no event id"));
      }
    }
    std::set<std::string> seen;
    for (std::string& id : ids) {
      if (seen.insert(id).second) out.ids.push_back(std::move(id));
    }
  }
  return out;
}

absl::StatusOr<TableRowsSql> SelectRows(
    const PgConnection& db, const OutboxTable& table,
    const std::map<std::string, std::string>& types,
    const RowSelection& selection) {
  TableRowsSql out;
  const OutboxColumns& c = table.columns;
  auto type_of = [&](const std::string& column) {
    auto it = types.find(column);
    return it == types.end() ? std::string() : it->second;
  };
  // The column a selector needs: present, and of a type it compares.
  auto need = [&](const std::string& column, absl::string_view key,
                  absl::string_view flags,
                  absl::string_view kinds) -> absl::Status {
    const std::string type = type_of(column);
    if (type.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", table.QualifiedName(),
                       " has no column \"", column, "\" (", key, ") to select ",
                       flags, " on; name its column with --set ", key,
                       "=COLUMN, or select by --ids or --seq-from/--seq-to"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("column \"", column, "\" (", key, ") of outbox table ",
                     table.QualifiedName(), " is ", type, ", not ", kinds));
  };
  std::vector<std::string> conditions;
  switch (selection.kind) {
    case RowSelection::Kind::kAll:
      break;
    case RowSelection::Kind::kTime: {
      const std::string column = db.Identifier(c.time);
      const std::string type = type_of(c.time);
      absl::StatusOr<std::string> lower = TimeBound(column, type, ">=", 1);
      if (!lower.ok()) {
        return need(c.time, "outbox.columns.time", "--since/--until",
                    "timestamptz, timestamp or an integer (Unix "
                    "milliseconds)");
      }
      conditions.push_back(*lower);
      out.params.push_back(selection.since);
      if (!selection.until.empty()) {
        conditions.push_back(*TimeBound(column, type, "<", 2));
        out.params.push_back(selection.until);
      }
      break;
    }
    case RowSelection::Kind::kSeq: {
      if (!IsInteger(type_of(c.seq))) {
        return need(c.seq, "outbox.columns.seq", "--seq-from/--seq-to",
                    "an integer");
      }
      const std::string column = db.Identifier(c.seq);
      conditions.push_back(absl::StrCat(column, " >= $1::bigint"));
      out.params.push_back(absl::StrCat(selection.seq_from));
      if (selection.seq_to) {
        conditions.push_back(absl::StrCat(column, " <= $2::bigint"));
        out.params.push_back(absl::StrCat(*selection.seq_to));
      }
      break;
    }
    case RowSelection::Kind::kIds:
      conditions.push_back(
          absl::StrCat(db.Identifier(c.id), "::text = ANY($1::text[])"));
      out.params.push_back(TextArray(selection.ids));
      break;
  }
  out.from_where = absl::StrCat(
      " FROM ", db.Identifier(table.schema), ".", db.Identifier(table.name),
      conditions.empty() ? "" : " WHERE ", absl::StrJoin(conditions, " AND "));
  // Creation order: the sequence, else the creation time.
  if (IsInteger(type_of(c.seq))) {
    out.order_column = db.Identifier(c.seq);
  } else if (!type_of(c.time).empty()) {
    out.order_column = db.Identifier(c.time);
  }
  if (!out.order_column.empty()) {
    out.order_by = absl::StrCat(" ORDER BY ", out.order_column);
  }
  return out;
}

namespace {

// Whether `table` still holds every row `selection` covers (NotKept).
absl::Status RowsKept(PgConnection* db, const OutboxTable& table,
                      const std::map<std::string, std::string>& types,
                      const RowSelection& selection, size_t ids_not_found,
                      const std::string& slot) {
  ASSIGN_OR_RETURN(
      PgResult stats,
      db->QueryParams("SELECT coalesce(sum(n_tup_del), 0)::text FROM "
                      "pg_stat_user_tables WHERE relid = "
                      "to_regclass(format('%I.%I', $1::text, $2::text))",
                      {table.schema, table.name}));
  const std::string deleted = PgConnection::Value(stats, 0, 0);
  if (deleted == "0" || deleted.empty()) return absl::OkStatus();
  const std::string name = absl::StrCat(db->Identifier(table.schema), ".",
                                        db->Identifier(table.name));
  ASSIGN_OR_RETURN(PgResult count,
                   db->Query(absl::StrCat("SELECT count(*) FROM ", name)));
  std::string what;
  if (PgConnection::Value(count, 0, 0) == "0") {
    what = "it holds no row";
  } else if (selection.kind == RowSelection::Kind::kIds && ids_not_found > 0) {
    what = absl::StrCat(ids_not_found, " of the named ids are not in it");
  } else if (selection.kind == RowSelection::Kind::kTime ||
             selection.kind == RowSelection::Kind::kSeq) {
    // A row at or before the selection's start: the rows it covers are
    // still there (the table deletes older ones only).
    const bool by_time = selection.kind == RowSelection::Kind::kTime;
    const std::string& column =
        by_time ? table.columns.time : table.columns.seq;
    auto type = types.find(column);
    if (type == types.end()) return absl::OkStatus();  // SelectRows said it
    std::string at_or_before =
        absl::StrCat(db->Identifier(column), " <= $1::bigint");
    if (by_time) {
      ASSIGN_OR_RETURN(at_or_before, TimeBound(db->Identifier(column),
                                               type->second, "<=", 1));
    }
    ASSIGN_OR_RETURN(
        PgResult older,
        db->QueryParams(
            absl::StrCat("SELECT EXISTS (SELECT 1 FROM ", name, " WHERE ",
                         at_or_before, ")"),
            {by_time ? selection.since : absl::StrCat(selection.seq_from)}));
    if (PgConnection::Value(older, 0, 0) == "t") return absl::OkStatus();
    ASSIGN_OR_RETURN(PgResult first, db->Query(absl::StrCat(
                                         "SELECT min(", db->Identifier(column),
                                         ")::text FROM ", name)));
    what = absl::StrCat("it holds no row at or before ",
                        selection.kind == RowSelection::Kind::kTime
                            ? selection.since
                            : absl::StrCat(selection.seq_from),
                        ", where the selection starts (its oldest has ", column,
                        " ", PgConnection::Value(first, 0, 0), ")");
  } else {
    return absl::OkStatus();
  }
  // What the slot still holds.
  std::string in_slot = absl::StrCat(
      "there is no replication slot \"", slot,
      "\" here (postgres.slot), so the deleted rows' events exist only in "
      "Kafka, if there");
  absl::StatusOr<PgResult> position = db->QueryParams(
      "SELECT coalesce(confirmed_flush_lsn::text, '') FROM "
      "pg_replication_slots WHERE slot_name = $1 AND database = "
      "current_database()",
      {slot});
  if (position.ok() && PgConnection::Rows(*position) > 0) {
    in_slot = absl::StrCat(
        "the events committed after slot \"", slot, "\"'s confirmed position ",
        PgConnection::Value(*position, 0, 0),
        " are still in the slot and the relay delivers them; those before it "
        "exist only in Kafka");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "outbox table ", table.QualifiedName(), " deletes its rows (", deleted,
      " deleted, pg_stat_user_tables.n_tup_del) and ", what,
      ": nothing can read deleted rows back (logical decoding cannot re-read "
      "a transaction before the slot's confirmed position); ",
      in_slot, ". Keep a retention window before deleting: ", kRetentionDoc));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> NotKept(
    PgConnection* db, const Config& config,
    const std::vector<std::map<std::string, std::string>>& types,
    const RowSelection& selection, const std::set<std::string>& found) {
  std::vector<std::string> not_found;
  for (const std::string& id : selection.ids) {
    if (found.count(id) == 0) not_found.push_back(id);
  }
  std::vector<std::string> lines;
  for (size_t t = 0; t < config.outbox.tables.size(); ++t) {
    absl::Status kept =
        RowsKept(db, config.outbox.tables[t], types.at(t), selection,
                 not_found.size(), config.postgres.slot);
    if (absl::IsFailedPrecondition(kept)) {
      lines.emplace_back(kept.message());
    } else if (!kept.ok()) {
      return kept;
    }
  }
  if (!not_found.empty()) {
    lines.push_back(absl::StrCat(
        not_found.size(), " of the ", selection.ids.size(),
        " named ids are in no outbox table (first: ", not_found.front(), ")"));
  }
  return lines;
}

absl::StatusOr<std::vector<CommittedEvent>> ReadCommittedEvents(
    const Config& config, const CommandLine::Rows& rows,
    std::vector<std::string>* not_kept, std::string* described) {
  PgConnectOptions options;
  options.conninfo = config.postgres.conninfo;
  options.application_name = "outbox-audit";
  options.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                   PgConnection::Connect(options));
  ASSIGN_OR_RETURN(RowSelection selection, ResolveRows(conn.get(), rows));
  if (described != nullptr) *described = selection.Describe(config);
  std::vector<CommittedEvent> out;
  std::set<std::string> found;
  std::vector<std::map<std::string, std::string>> all_types;
  for (const OutboxTable& t : config.outbox.tables) {
    ASSIGN_OR_RETURN(ColumnTypeMap types, ColumnTypes(conn.get(), t));
    if (types.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("outbox table ", t.QualifiedName(),
                       " does not exist or this role cannot read it"));
    }
    ASSIGN_OR_RETURN(TableRowsSql sql, SelectRows(*conn, t, types, selection));
    const std::string query = absl::StrCat(
        "SELECT ", conn->Identifier(t.columns.id), "::text, ",
        conn->Identifier(t.key), "::text, ",
        sql.order_column.empty() ? "0"
                                 : absl::StrCat("row_number() OVER (ORDER BY ",
                                                sql.order_column, ")"),
        sql.from_where);
    absl::StatusOr<PgResult> res = conn->QueryParams(query, sql.params);
    if (!res.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "outbox table ", t.QualifiedName(), ": ", res.status().message()));
    }
    for (int i = 0; i < PgConnection::Rows(*res); ++i) {
      out.push_back({PgConnection::Value(*res, i, 0),
                     PgConnection::Value(*res, i, 1),
                     std::atoll(PgConnection::Value(*res, i, 2).c_str())});
      found.insert(out.back().id);
    }
    all_types.push_back(std::move(types));
  }
  ASSIGN_OR_RETURN(*not_kept,
                   NotKept(conn.get(), config, all_types, selection, found));
  return out;
}

std::string TopicPattern(absl::string_view topic_template) {
  std::string re = "^";
  for (size_t i = 0; i < topic_template.size(); ++i) {
    char c = topic_template[i];
    if (c == '{' && i + 1 < topic_template.size() &&
        topic_template[i + 1] == '{') {
      re += "\\{";
      ++i;
    } else if (c == '}' && i + 1 < topic_template.size() &&
               topic_template[i + 1] == '}') {
      re += "\\}";
      ++i;
    } else if (c == '{') {
      size_t end = topic_template.find('}', i);
      if (end == absl::string_view::npos) break;
      re += ".+";
      i = end;
    } else {
      if (c == '.' || c == '-') re += '\\';
      re += c;
    }
  }
  return re + "$";
}

namespace {

// `topic` as a regex that matches it alone.
std::string ExactPattern(absl::string_view topic) {
  std::string re = "^";
  for (char c : topic) {
    if (absl::string_view("\\^$.|?*+()[]{}-/").find(c) !=
        absl::string_view::npos) {
      re += '\\';
    }
    re += c;
  }
  return re + "$";
}

}  // namespace

absl::StatusOr<std::vector<std::string>> RoutedTopicPatterns(
    const Config& config, absl::string_view application_name) {
  std::vector<std::string> patterns;
  if (config.outbox.topic_regex.empty()) {
    for (const OutboxTable& t : config.outbox.tables) {
      patterns.push_back(TopicPattern(t.topic));
    }
    return patterns;
  }
  // The topic of a value that the regex does not match is the value itself:
  // no pattern short of "every topic" covers them, so read the values.
  ASSIGN_OR_RETURN(TopicRegex regex,
                   TopicRegex::Create(config.outbox.topic_regex,
                                      config.outbox.topic_replacement));
  PgConnectOptions options;
  options.conninfo = config.postgres.conninfo;
  options.application_name = std::string(application_name);
  options.connect_timeout_s =
      static_cast<int>(config.postgres.connect_timeout_s);
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                   PgConnection::Connect(options));
  std::set<std::string> topics;
  for (const OutboxTable& t : config.outbox.tables) {
    const std::string column = conn->Identifier(t.columns.aggregatetype);
    absl::StatusOr<PgResult> res = conn->Query(absl::StrCat(
        "SELECT DISTINCT ", column, "::text FROM ", conn->Identifier(t.schema),
        ".", conn->Identifier(t.name), " WHERE ", column, " IS NOT NULL"));
    if (!res.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "outbox table ", t.QualifiedName(), ": ", res.status().message()));
    }
    std::string topic;
    for (int i = 0; i < PgConnection::Rows(*res); ++i) {
      regex.Apply(PgConnection::Value(*res, i, 0), &topic);
      topics.insert(topic);
    }
  }
  for (const std::string& topic : topics) {
    patterns.push_back(ExactPattern(topic));
  }
  return patterns;
}

absl::StatusOr<std::vector<PublishedRecord>> ReadPublishedRecords(
    const Config& config, const std::vector<std::string>& patterns,
    int timeout_s, bool read_committed, FILE* progress) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  UseRdKafkaLog(conf);
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) {
    return rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) ==
           RD_KAFKA_CONF_OK;
  };
  // Connection settings (TLS, SASL) apply to the consumer too; producer-only
  // ones are skipped.
  for (const auto& [k, v] : config.kafka.properties) {
    if (k.rfind("security.", 0) == 0 || k.rfind("ssl.", 0) == 0 ||
        k.rfind("sasl.", 0) == 0 || k == "client.id") {
      set(k, v);
    }
  }
  set("bootstrap.servers", config.kafka.brokers);
  set("group.id", "outbox-audit");
  set("enable.auto.commit", "false");
  set("enable.partition.eof", "true");
  // Explicit: librdkafka's default is read_committed. Either way the end of
  // a partition is reported (at the last stable offset when committed).
  set("isolation.level",
      read_committed ? "read_committed" : "read_uncommitted");
  set("log_level", "3");
  // A refused password or certificate ends the wait for metadata at once,
  // and says why (not only "transport failure").
  KafkaRefusal refusal(config.kafka.brokers);
  refusal.Watch(conf);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(err);
  }
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> guard(rk,
                                                           rd_kafka_destroy);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e =
      refusal.Metadata(rk, /*all_topics=*/true, nullptr, &md, 10000);
  if (!refusal.status().ok()) return refusal.status();
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    (void)refusal.Check(rk);  // the reason of an error told meanwhile
    return absl::UnavailableError(
        absl::StrCat("cannot connect to Kafka (", config.kafka.brokers,
                     "): metadata: ", rd_kafka_err2str(e),
                     refusal.last_error().empty()
                         ? ""
                         : absl::StrCat(" (", refusal.last_error(), ")")));
  }
  std::vector<std::regex> res;
  for (const auto& p : patterns) res.emplace_back(p);
  rd_kafka_topic_partition_list_t* assign =
      rd_kafka_topic_partition_list_new(16);
  std::map<std::pair<std::string, int32_t>, int64_t> end;
  int64_t total = 0;
  for (int i = 0; i < md->topic_cnt; ++i) {
    std::string topic = md->topics[i].topic;
    bool match = false;
    for (const auto& re : res) match |= std::regex_match(topic, re);
    if (!match) continue;
    for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
      int32_t part = md->topics[i].partitions[p].id;
      int64_t lo = 0, hi = 0;
      e = static_cast<rd_kafka_resp_err_t>(
          QueryWatermarks(rk, topic, part, 10000, &lo, &hi));
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // Never taken for an empty partition: its events would be reported
        // missing.
        rd_kafka_topic_partition_list_destroy(assign);
        rd_kafka_metadata_destroy(md);
        return absl::UnavailableError(
            absl::StrCat("cannot read the end of Kafka topic ", topic,
                         " partition ", part, ": ", rd_kafka_err2str(e)));
      }
      if (hi <= lo) continue;
      end[{topic, part}] = hi;
      total += hi - lo;
      rd_kafka_topic_partition_list_add(assign, topic.c_str(), part)->offset =
          RD_KAFKA_OFFSET_BEGINNING;
    }
  }
  rd_kafka_metadata_destroy(md);
  std::vector<PublishedRecord> out;
  if (end.empty()) {
    rd_kafka_topic_partition_list_destroy(assign);
    return out;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_assign(rk, assign);
  rd_kafka_topic_partition_list_destroy(assign);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  size_t done = 0;
  std::map<std::pair<std::string, int32_t>, bool> finished;
  // Offsets, not records: a transactional topic's commit markers take some.
  Progress meter(progress, progress != nullptr, "reading Kafka", "records",
                 total);
  while (done < end.size()) {
    meter.Update(static_cast<int64_t>(out.size()));
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "read ", out.size(), " records but ", end.size() - done,
          " partitions did not reach their end within ", timeout_s, " s"));
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 500);
    if (m == nullptr) continue;
    std::string topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
    auto key = std::make_pair(topic, m->partition);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      PublishedRecord r;
      r.topic = topic;
      r.partition = m->partition;
      r.offset = m->offset;
      if (m->key) r.key.assign(static_cast<char*>(m->key), m->key_len);
      rd_kafka_headers_t* hdrs = nullptr;
      const void* val = nullptr;
      size_t size = 0;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          rd_kafka_header_get_last(hdrs, "id", &val, &size) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          val != nullptr) {
        r.id.assign(static_cast<const char*>(val), size);
      }
      out.push_back(std::move(r));
    }
    bool at_end = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                  (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && end.count(key) &&
                   m->offset + 1 >= end[key]);
    if (at_end && end.count(key) && !finished[key]) {
      finished[key] = true;
      ++done;
    }
    rd_kafka_message_destroy(m);
  }
  meter.Finish(static_cast<int64_t>(out.size()));
  rd_kafka_consumer_close(rk);
  return out;
}

}  // namespace outbox
