// `outbox-relay republish`: closes the gap a lost replication slot leaves
// (a failover on PostgreSQL <= 16, a slot not synchronized to the promoted
// standby, a slot dropped or invalidated) with one command.
//
//   outbox-relay republish --since TIMESTAMP [--until TIMESTAMP] [--dry-run]
//   outbox-relay republish --ids ID[,ID...] | --ids-file FILE [--dry-run]
//   outbox-relay republish --seq-from N [--seq-to N] [--dry-run]
//   outbox-relay republish --all [--dry-run]
//
// It reads the outbox tables' selected rows (audit/audit_sources.h,
// SelectRows: outbox.columns.time >= since, < until; the named ids;
// outbox.columns.seq in [from, to]; every row), then every record of the topics
// the configured routing gives them (RoutedTopicPatterns: the templates,
// or outbox.topic_regex; the audit's reader, so also records
// produced while it runs are seen only up to the end offsets at its start),
// and produces exactly the events whose id no record carries
// (MissingEvents, audit/audit.h): read as outbox-poller reads rows
// (poller/outbox_row_sql.h), through the relay's Router and its Kafka
// producer options (RelayKafkaOptions), so topic, key, value and headers are
// the bytes outbox-relay produces for the same row. Consumers de-duplicate
// on the id header. Order: per table, in creation order (the seq column,
// else the time column). Under on_invalid: dead_letter the dead-letter topic is
// read too: an event the relay dead-lettered is in Kafka. A row the Router
// cannot map is counted failed, never dead-lettered here.
//
// The tables are read before the topics, so an event the running relay
// delivers in between is at worst produced twice, never skipped. It never
// touches the replication slot.
//
// Prints what it did (events considered, already in Kafka, re-published,
// failed) on `out`. Exit 0 when every missing event was delivered (or, with
// dry_run, always after the count); otherwise one line on `err` and
// kExitInternal (a delivery failed, a server could not be read) or
// kExitPrecondition (a table or the selection's column is missing, or a
// table no longer holds rows the selection covers: NotKept's lines, printed
// after re-publishing what the tables do hold) or kExitUsage (a time
// PostgreSQL cannot read, an unreadable --ids-file). Threading: the calling
// thread only.
#ifndef OUTBOX_CLI_REPUBLISH_COMMAND_H_
#define OUTBOX_CLI_REPUBLISH_COMMAND_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "config/command_line.h"
#include "config/config.h"

namespace outbox {

int RunRepublishCommand(const Config& config, const CommandLine::Rows& rows,
                        const CommandLine::Republish& options, FILE* out,
                        FILE* err);

}  // namespace outbox

#endif  // OUTBOX_CLI_REPUBLISH_COMMAND_H_
