// Where outbox-audit reads from: the outbox tables (what was committed) and
// Kafka (what was published). Both read-only; neither takes the slot or
// commits consumer offsets.
#ifndef OUTBOX_AUDIT_AUDIT_SOURCES_H_
#define OUTBOX_AUDIT_AUDIT_SOURCES_H_

#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "audit/audit.h"
#include "config/config.h"

namespace outbox {

// Every row of the configured outbox tables: id, key column, and creation
// order (the seq column, else created_at, else none: seq 0 for all, which
// disables the order check).
absl::StatusOr<std::vector<CommittedEvent>> ReadCommittedEvents(
    const Config& config);

// A regex matching every topic a table's template can render
// ("outbox.event.{aggregatetype}" -> "^outbox\.event\..+$").
std::string TopicPattern(absl::string_view topic_template);

// Every topic the configured routing can have put the outbox tables' events
// in, as regexes for ReadPublishedRecords: each table's template pattern
// (TopicPattern), or under outbox.topic_regex the exact topic
// (TopicRegex::Apply) of each distinct aggregatetype value the tables hold
// now (read over a connection named application_name). The one answer to
// "which topics does this configuration route to", for outbox-audit and
// `outbox-relay republish`; call it after reading the events, so each of
// their topics is covered. FailedPrecondition when a table cannot be read.
absl::StatusOr<std::vector<std::string>> RoutedTopicPatterns(
    const Config& config, absl::string_view application_name);

// Reads every record of the topics matching any pattern, from the beginning
// up to the end offsets seen at the start, in partition order.
// read_committed: only records of committed Kafka transactions (what an
// exactly-once relay's consumers see); otherwise read_uncommitted: every
// record written, aborted transactions included (the same for a
// non-transactional producer). When `progress` is not null (a terminal),
// draws a progress meter on it.
absl::StatusOr<std::vector<PublishedRecord>> ReadPublishedRecords(
    const Config& config, const std::vector<std::string>& patterns,
    int timeout_s, bool read_committed = false, FILE* progress = nullptr);

}  // namespace outbox

#endif  // OUTBOX_AUDIT_AUDIT_SOURCES_H_
