// The builders the key table is written with, and one function per section
// that appends that section's keys. ConfigKeys() (config_keys.cc) calls the
// section functions in the order of config.h; the generated reference under
// docs/reference lists keys in this order, so a key moves only with its docs.
// Include only from config_keys*.cc: it defines the macros G and T.
#ifndef OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_
#define OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_

#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "config/config_keys.h"

namespace outbox::config_key_table {

template <typename T>
inline T* Touch(std::optional<T>& o) {
  if (!o.has_value()) o.emplace();
  return &*o;
}

// Accessor shorthands: G(expr) for a Config field, T(expr) for a table one.
#define G(expr) [](Config& c) -> FieldRef { return &c.expr; }
#define T(expr) [](TableDraft& t) -> FieldRef { return Touch(t.expr); }

// A key with only its path and description; the builders below add the
// rest.
inline ConfigKey Described(absl::string_view path,
                           absl::string_view description) {
  ConfigKey k;
  k.path = path;
  k.description = description;
  return k;
}

inline ConfigKey Global(absl::string_view path, FieldRef (*global)(Config&),
                        absl::string_view description) {
  ConfigKey k = Described(path, description);
  k.global = global;
  return k;
}

inline ConfigKey Table(absl::string_view path, FieldRef (*table)(TableDraft&),
                       absl::string_view default_text,
                       absl::string_view description) {
  ConfigKey k = Described(path, description);
  k.table = table;
  k.default_text = default_text;
  return k;
}

inline ConfigKey List(absl::string_view path, absl::string_view default_text,
                      absl::string_view description) {
  ConfigKey k = Described(path, description);
  k.default_text = default_text;
  return k;
}

// What a section function appends its keys with: add(Global(...)).
class KeyAppender {
 public:
  explicit KeyAppender(std::vector<ConfigKey>* keys) : keys_(keys) {}
  void operator()(ConfigKey key) const { keys_->push_back(key); }

 private:
  std::vector<ConfigKey>* keys_;
};

// Each appends its section's keys with `add`, in table order.
void AddPostgresKeys(KeyAppender add);  // postgres.*
void AddOutboxKeys(KeyAppender add);    // outbox.*
void AddKafkaKeys(KeyAppender add);     // kafka.*
void AddRuntimeKeys(KeyAppender add);   // limits.*, http.*, log.*, poller.*

}  // namespace outbox::config_key_table

#endif  // OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_
