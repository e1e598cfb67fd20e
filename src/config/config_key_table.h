// The table of configuration keys (config_key_table.cc), for
// config_keys.cc's ConfigKeys().
#ifndef OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_
#define OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_

#include <vector>

#include "config/config_keys.h"

namespace outbox {

// Every key, in the reference's order; built once by ConfigKeys().
std::vector<ConfigKey> BuildKeys();

}  // namespace outbox

#endif  // OUTBOX_CONFIG_CONFIG_KEY_TABLE_H_
