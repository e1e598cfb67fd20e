#include "route/router.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/uuid.h"
#include "outbox/status_macros.h"
#include "route/record_value.h"

namespace outbox {
namespace {

// Index of `name` in *columns, appending it if absent.
int SlotOf(std::vector<std::string>* columns, const std::string& name) {
  auto it = std::find(columns->begin(), columns->end(), name);
  if (it != columns->end()) return static_cast<int>(it - columns->begin());
  columns->push_back(name);
  return static_cast<int>(columns->size() - 1);
}

void AppendEscaped(std::string* out, absl::string_view name) {
  for (char c : name) {
    if (c == '\\' || c == ',' || c == '.' || c == '*' ||
        absl::ascii_isspace(c)) {
      out->push_back('\\');
    }
    out->push_back(c);
  }
}

// An optional column (placement, timestamp, schema version) the row lacks.
absl::Status MissingColumn(absl::string_view what, absl::string_view column) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " column ", column, " is missing"));
}

absl::Status EventError(absl::string_view id, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("event ", id, ": ", what));
}

}  // namespace

const std::string& DebeziumRunId() {
  static const std::string* run_id = new std::string(NewUuidV7());
  return *run_id;
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(
    const OutboxConfig& outbox) {
  if (outbox.tables.empty() && !outbox.messages.enabled) {
    return absl::InvalidArgumentError(
        "no outbox tables configured and no tableless outbox");
  }
  if (outbox.on_invalid == OnInvalid::kDeadLetter) {
    absl::Status s = ValidateTopicName(outbox.dead_letter_topic);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("outbox.dead_letter_topic: ", s.message()));
    }
  }
  auto options = std::make_unique<Options>();
  options->debezium = outbox.compatibility == Compatibility::kDebezium;
  if (options->debezium) {
    // Debezium's connector adds these before any transform runs, so they
    // precede the event router's "id".
    options->context_values = {outbox.debezium.connector_logical_name,
                               outbox.debezium.task_id,
                               outbox.debezium.connector_name};
    std::vector<const char*> names = {"__debezium.context.connectorLogicalName",
                                      "__debezium.context.taskId",
                                      "__debezium.context.connectorName"};
    if (outbox.debezium.run_id) {
      options->context_values.push_back(DebeziumRunId());
      names.push_back("__debezium.context.runId");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      options->context_headers.push_back(
          Header{names[i], options->context_values[i], false});
    }
  }
  options->commit_time =
      outbox.timestamp == TimestampSource::kCommit ||
      (outbox.timestamp == TimestampSource::kAuto && !options->debezium);
  options->expand_json_payload = outbox.expand_json_payload;
  options->tombstone_on_empty_payload = outbox.tombstone_on_empty_payload;
  if (!outbox.topic_regex.empty()) {
    ASSIGN_OR_RETURN(
        TopicRegex regex,
        TopicRegex::Create(outbox.topic_regex, outbox.topic_replacement));
    options->topic_regex = std::make_unique<TopicRegex>(std::move(regex));
  } else if (!outbox.topic_replacement.empty()) {
    return absl::InvalidArgumentError(
        "outbox.topic_replacement needs outbox.topic_regex");
  }
  ASSIGN_OR_RETURN(std::vector<FieldPlacement> fields,
                   ParseFieldPlacements(outbox.fields));

  std::vector<Mapping> mappings;
  for (const OutboxTable& t : outbox.tables) {
    std::vector<std::string> columns;
    SlotOf(&columns, t.columns.id);  // kIdSlot
    // The key column may coincide with the id column; keep slot 1 for it
    // anyway so the fixed slots stay fixed.
    columns.push_back(t.key);              // kKeySlot
    columns.push_back(t.columns.payload);  // kPayloadSlot
    std::vector<std::pair<std::string, int>> headers, envelope;
    int partition = -1, timestamp = -1, schema_version = -1, route_by = -1;
    for (const FieldPlacement& f : fields) {
      int slot = SlotOf(&columns, f.column);
      switch (f.where) {
        case FieldPlacement::Where::kHeader:
          headers.emplace_back(f.name, slot);
          break;
        case FieldPlacement::Where::kEnvelope:
          envelope.emplace_back(f.name, slot);
          break;
        case FieldPlacement::Where::kPartition:
          partition = slot;
          break;
      }
    }
    for (const auto& [column, header] : t.headers) {
      headers.emplace_back(header, SlotOf(&columns, column));
    }
    if (!outbox.timestamp_column.empty()) {
      timestamp = SlotOf(&columns, outbox.timestamp_column);
    }
    if (!outbox.schema_version_column.empty()) {
      schema_version = SlotOf(&columns, outbox.schema_version_column);
    }
    if (options->topic_regex != nullptr) {
      route_by = SlotOf(&columns, t.columns.aggregatetype);
    }
    // Placeholders may name any mapped column; the row scan only looks for
    // the ones the template uses. With a topic regex the template is only
    // checked.
    std::vector<std::string> candidates = columns;
    for (const std::string* c :
         {&t.columns.aggregatetype, &t.columns.aggregateid, &t.columns.type}) {
      SlotOf(&candidates, *c);
    }
    auto parsed = TopicTemplate::Create(t.topic, candidates);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(t.QualifiedName(), ": ", parsed.status().message()));
    }
    TopicTemplate topic = *std::move(parsed);
    if (options->topic_regex == nullptr) {
      for (const std::string& c : topic.Placeholders()) SlotOf(&columns, c);
      ASSIGN_OR_RETURN(topic, TopicTemplate::Create(t.topic, columns));
    }
    for (char c : topic.LiteralText()) {
      if (!IsLegalTopicChar(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat(t.QualifiedName(), ": topic template \"", t.topic,
                         "\" has a character Kafka forbids: '",
                         std::string(1, c), "' (allowed: a-z A-Z 0-9 . _ -)"));
      }
    }
    mappings.push_back(Mapping{t.schema, t.name, std::move(columns),
                               std::move(headers), std::move(envelope),
                               std::move(topic), route_by, partition, timestamp,
                               schema_version});
  }
  return std::unique_ptr<Router>(
      new Router(std::move(mappings), std::move(options)));
}

const Router::Mapping* Router::Find(absl::string_view schema,
                                    absl::string_view table) const {
  for (const Mapping& m : mappings_) {
    if (m.table == table && m.schema == schema) return &m;
  }
  return nullptr;
}

absl::Status Router::Route(const Change& change, Record* out) const {
  const Mapping* m = Find(change.schema, change.table);
  if (m == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no outbox mapping for table ", change.schema, ".", change.table));
  }

  // One pass over the row finds every column the mapping uses.
  const size_t n = m->columns.size();
  absl::InlinedVector<const Column*, 16> slots(n, nullptr);
  size_t found = 0;
  for (const Column& c : change.columns) {
    for (size_t i = 0; i < n; ++i) {
      if (m->columns[i] == c.name) {
        if (slots[i] == nullptr) {
          slots[i] = &c;
          ++found;
        }
      }
    }
    if (found == n) break;
  }
  // The key slot may repeat the id column's name; the loop above fills both.

  const Column* id = slots[kIdSlot];
  // Set first, so a caller handling a poison row knows which event it is.
  out->event_id = id != nullptr ? id->value : absl::string_view();
  if (id == nullptr || id->kind == ValueKind::kNull) {
    return absl::InvalidArgumentError(absl::StrCat(
        change.schema, ".", change.table, ": event id column ",
        m->columns[kIdSlot], id == nullptr ? " is missing" : " is null"));
  }
  const Column* key = slots[kKeySlot];
  if (key == nullptr || key->kind == ValueKind::kNull) {
    return EventError(
        id->value, absl::StrCat("key column ", m->columns[kKeySlot],
                                key == nullptr ? " is missing" : " is null"));
  }
  const Column* payload = slots[kPayloadSlot];
  if (payload == nullptr) {
    return EventError(id->value,
                      absl::StrCat("payload column ", m->columns[kPayloadSlot],
                                   " is missing"));
  }

  absl::Status s;
  if (options_->topic_regex != nullptr) {
    const Column* by = slots[m->route_by];
    if (by == nullptr || by->kind == ValueKind::kNull) {
      return EventError(
          id->value, absl::StrCat("topic column ", m->columns[m->route_by],
                                  by == nullptr ? " is missing" : " is null"));
    }
    options_->topic_regex->Apply(by->value, &out->topic);
  } else {
    s = m->topic.Render(slots.data(), &out->topic);
    if (!s.ok()) return EventError(id->value, s.message());
  }
  s = ValidateTopicName(out->topic);
  if (!s.ok()) return EventError(id->value, s.message());

  out->key = key->value;
  out->key_is_null = false;
  out->event_id = id->value;
  out->commit_time_us = change.commit_time_us;
  s = FillValue(*m, slots.data(), payload, out);
  if (!s.ok()) return EventError(id->value, s.message());
  s = FillPlacement(*m, slots.data(), change.commit_time_us, out);
  if (!s.ok()) return EventError(id->value, s.message());

  const size_t fixed = options_->context_headers.size();
  out->headers.resize(fixed + 1 + m->headers.size());
  for (size_t i = 0; i < fixed; ++i) {
    Header& h = out->headers[i];
    h.name.assign(options_->context_headers[i].name);
    h.value = options_->context_headers[i].value;
    h.is_null = false;
  }
  Header& id_header = out->headers[fixed];
  id_header.name.assign("id");
  id_header.value = id->value;
  id_header.is_null = false;
  for (size_t i = 0; i < m->headers.size(); ++i) {
    const auto& [name, slot] = m->headers[i];
    const Column* c = slots[slot];
    if (c == nullptr) {
      return EventError(
          id->value,
          absl::StrCat("header column ", m->columns[slot], " is missing"));
    }
    Header& h = out->headers[fixed + 1 + i];
    h.name.assign(name);
    h.is_null = c->kind == ValueKind::kNull;
    h.value = h.is_null ? absl::string_view() : c->value;
  }
  return absl::OkStatus();
}

absl::Status Router::FillValue(const Mapping& m, const Column* const* slots,
                               const Column* payload, Record* out) const {
  out->value_is_null = payload->kind == ValueKind::kNull;
  out->value = out->value_is_null ? absl::string_view() : payload->value;
  if (options_->tombstone_on_empty_payload &&
      (out->value_is_null || IsBlankPayload(out->value))) {
    out->value_is_null = true;
    out->value = {};
    return absl::OkStatus();
  }
  if (options_->expand_json_payload && !out->value_is_null &&
      CompactJson(out->value, &out->value_storage)) {
    out->value = out->value_storage;
  }
  if (m.envelope.empty()) return absl::OkStatus();
  std::vector<EnvelopeField> fields;
  // The payload as expanded above, keeping its column's type.
  Column expanded = *payload;
  expanded.value = out->value;
  fields.emplace_back("payload", &expanded);
  for (const auto& [name, slot] : m.envelope) {
    if (slots[slot] == nullptr)
      return MissingColumn("envelope", m.columns[slot]);
    fields.emplace_back(name, slots[slot]);
  }
  std::string envelope;
  if (options_->debezium) {
    AppendStructEnvelope(fields, &envelope);
  } else {
    AppendJsonEnvelope(fields, &envelope);
  }
  out->value_storage = std::move(envelope);
  out->value = out->value_storage;
  out->value_is_null = false;
  return absl::OkStatus();
}

absl::Status Router::FillPlacement(const Mapping& m, const Column* const* slots,
                                   int64_t commit_time_us, Record* out) const {
  out->partition = -1;
  if (m.partition >= 0) {
    const Column* c = slots[m.partition];
    if (c == nullptr) return MissingColumn("partition", m.columns[m.partition]);
    if (c->kind != ValueKind::kNull) {
      ASSIGN_OR_RETURN(out->partition, ColumnInt32(*c, 0));
    }
  }
  if (m.schema_version >= 0) {
    // Debezium reads it as an int32 into the value schema's version; the
    // record carries no schema, so only the check remains.
    const Column* c = slots[m.schema_version];
    if (c == nullptr) {
      return MissingColumn("schema version", m.columns[m.schema_version]);
    }
    if (c->kind != ValueKind::kNull) {
      RETURN_IF_ERROR(
          ColumnInt32(*c, std::numeric_limits<int32_t>::min()).status());
    }
  }
  out->timestamp_ms = options_->commit_time ? commit_time_us / 1000 : 0;
  if (m.timestamp >= 0) {
    const Column* c = slots[m.timestamp];
    if (c == nullptr) return MissingColumn("timestamp", m.columns[m.timestamp]);
    if (c->kind != ValueKind::kNull) {
      ASSIGN_OR_RETURN(out->timestamp_ms, ColumnTimestampMs(*c));
    }
  }
  return absl::OkStatus();
}

absl::string_view Router::EventId(const Change& change) const {
  const Mapping* m = Find(change.schema, change.table);
  if (m == nullptr) return {};
  const Column* id = change.Find(m->columns[kIdSlot]);
  return id == nullptr || id->kind == ValueKind::kNull ? absl::string_view()
                                                       : id->value;
}

std::vector<std::string> Router::wal2json_add_tables() const {
  std::vector<std::string> out;
  for (const Mapping& m : mappings_) {
    std::string entry;
    AppendEscaped(&entry, m.schema);
    entry.push_back('.');
    AppendEscaped(&entry, m.table);
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<Router::TableColumns> Router::RequiredColumns() const {
  std::vector<TableColumns> out;
  for (const Mapping& m : mappings_) {
    TableColumns t{m.schema, m.table, {}};
    for (const std::string& c : m.columns) {
      if (std::find(t.columns.begin(), t.columns.end(), c) == t.columns.end()) {
        t.columns.push_back(c);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace outbox
