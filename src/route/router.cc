#include "route/router.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "outbox/status_macros.h"

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

absl::Status EventError(absl::string_view id, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("event ", id, ": ", what));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Router>> Router::Create(
    const OutboxConfig& outbox) {
  if (outbox.tables.empty()) {
    return absl::InvalidArgumentError("no outbox tables configured");
  }
  if (outbox.on_invalid == OnInvalid::kDeadLetter) {
    absl::Status s = ValidateTopicName(outbox.dead_letter_topic);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("outbox.dead_letter_topic: ", s.message()));
    }
  }
  std::vector<Mapping> mappings;
  for (const OutboxTable& t : outbox.tables) {
    std::vector<std::string> columns;
    SlotOf(&columns, t.columns.id);  // kIdSlot
    // The key column may coincide with the id column; keep slot 1 for it
    // anyway so the fixed slots stay fixed.
    columns.push_back(t.key);              // kKeySlot
    columns.push_back(t.columns.payload);  // kPayloadSlot
    std::vector<std::pair<std::string, int>> headers;
    for (const auto& [column, header] : t.headers) {
      headers.emplace_back(header, SlotOf(&columns, column));
    }
    // Placeholders may name any mapped column; the row scan only looks for
    // the ones the template uses.
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
    for (const std::string& c : parsed->Placeholders()) SlotOf(&columns, c);
    ASSIGN_OR_RETURN(TopicTemplate topic,
                     TopicTemplate::Create(t.topic, columns));
    for (char c : topic.LiteralText()) {
      if (!IsLegalTopicChar(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat(t.QualifiedName(), ": topic template \"", t.topic,
                         "\" has a character Kafka forbids: '",
                         std::string(1, c), "' (allowed: a-z A-Z 0-9 . _ -)"));
      }
    }
    mappings.push_back(Mapping{t.schema, t.name, std::move(columns),
                               std::move(headers), std::move(topic)});
  }
  return std::unique_ptr<Router>(new Router(std::move(mappings)));
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

  absl::Status s = m->topic.Render(slots.data(), &out->topic);
  if (!s.ok()) return EventError(id->value, s.message());
  s = ValidateTopicName(out->topic);
  if (!s.ok()) return EventError(id->value, s.message());

  out->key = key->value;
  out->key_is_null = false;
  out->value_is_null = payload->kind == ValueKind::kNull;
  out->value = out->value_is_null ? absl::string_view() : payload->value;
  out->event_id = id->value;
  out->commit_time_us = change.commit_time_us;

  out->headers.resize(1 + m->headers.size());
  Header& id_header = out->headers[0];
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
    Header& h = out->headers[i + 1];
    h.name.assign(name);
    h.is_null = c->kind == ValueKind::kNull;
    h.value = h.is_null ? absl::string_view() : c->value;
  }
  return absl::OkStatus();
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
