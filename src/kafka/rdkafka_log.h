// librdkafka's own log lines, the same for every client the tools create
// (the relay's producer, the admin client, the checkpoint and audit
// readers): warnings and worse to stderr, prefixed "librdkafka FACILITY:",
// instead of librdkafka's default "%4|<time>|FAC|<client>| ..." lines.
//
// Connection errors repeat while a broker is down; the tools report the
// outage themselves, so nothing below a warning. One line is dropped:
// librdkafka calls enable.gapless.guarantee "experimental" at every client
// start, and outbox-relay sets it on purpose (under outbox.on_invalid:
// halt; docs/reference/kafka-producer.md).
#ifndef OUTBOX_KAFKA_RDKAFKA_LOG_H_
#define OUTBOX_KAFKA_RDKAFKA_LOG_H_

#include <librdkafka/rdkafka.h>

#include "absl/strings/string_view.h"

namespace outbox {

// Sets `conf`'s log callback to RdKafkaLog(). Keeps its opaque.
void UseRdKafkaLog(rd_kafka_conf_t* conf);

// Whether a librdkafka line of `level` from `facility` is printed.
bool RdKafkaLogShown(int level, absl::string_view facility,
                     absl::string_view line);

}  // namespace outbox

#endif  // OUTBOX_KAFKA_RDKAFKA_LOG_H_
