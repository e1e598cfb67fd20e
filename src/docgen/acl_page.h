// KafkaAclsPage: docs/operations/kafka-acls.md, the Kafka ACLs each mode of
// each tool needs, generated from config/kafka_acls.h (the code that
// `outbox-relay acls` prints with) for example configurations, so the page
// and the command cannot disagree.
#ifndef OUTBOX_DOCGEN_ACL_PAGE_H_
#define OUTBOX_DOCGEN_ACL_PAGE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

// `note` goes right under the title (the "generated" comment).
std::string KafkaAclsPage(absl::string_view note);

}  // namespace outbox

#endif  // OUTBOX_DOCGEN_ACL_PAGE_H_
