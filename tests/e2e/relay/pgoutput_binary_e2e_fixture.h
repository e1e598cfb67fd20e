// The fixture of the pgoutput binary transfer tests
// (pgoutput_binary_e2e_test.cc, float_digits_e2e_test.cc; one binary):
// decoding a slot's pending inserts in either mode, and a binary and a text
// relay side by side on one table.
#ifndef OUTBOX_TESTS_E2E_RELAY_PGOUTPUT_BINARY_E2E_FIXTURE_H_
#define OUTBOX_TESTS_E2E_RELAY_PGOUTPUT_BINARY_E2E_FIXTURE_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "e2e/relay/relay_e2e_fixture.h"
#include "hex_bytes.h"
#include "plugin/pgoutput/pgoutput_decoder.h"

namespace outbox::testing {

// A Column that outlives the next Decode().
struct OwnedColumn {
  std::string name, type;
  ValueKind kind;
  std::string value;
  bool operator==(const OwnedColumn&) const = default;
};

inline void PrintTo(const OwnedColumn& c, std::ostream* os) {
  *os << c.name << ":" << c.type << ":" << static_cast<int>(c.kind) << ":"
      << absl::CEscape(c.value.substr(0, 80));
}

class PgOutputBinaryE2ETest : public RelayE2ETest {
 protected:
  // Every Insert of the slot's pending changes, decoded with or without
  // binary 'true'; the raw messages go to *raw.
  std::vector<std::vector<OwnedColumn>> DecodeInserts(
      const std::string& slot, const std::string& pub, bool binary,
      std::vector<std::string>* raw) {
    auto rows = db_->Query(
        "SELECT encode(data, 'hex') FROM "
        "pg_logical_slot_peek_binary_changes('" +
        slot + "', NULL, NULL, 'proto_version', '1', 'publication_names', '" +
        pub + "'" + (binary ? ", 'binary', 'true'" : "") + ")");
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::vector<std::vector<OwnedColumn>> out;
    if (!rows.ok()) return out;
    PgOutputDecoder decoder(binary);
    Change change;
    for (const auto& row : *rows) {
      std::string data;
      data = HexBytes(row[0]);
      absl::Status s = decoder.Decode(data, &change);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || change.kind != Change::Kind::kInsert) continue;
      raw->push_back(data);
      auto& cols = out.emplace_back();
      for (const Column& c : change.columns) {
        cols.push_back({std::string(c.name), std::string(c.type), c.kind,
                        std::string(c.value)});
      }
    }
    return out;
  }

  // Two pgoutput relays on this test's table, each with RelayArgs() and
  // `common`: relay_ in binary (auto, the default) on slot_ with
  // `binary_extra`, and the one returned in text (off) on slot_ + "_t"
  // with `text_extra`. Null unless both came to hold their slots.
  std::unique_ptr<Process> StartBinaryAndText(
      const std::vector<std::string>& common,
      const std::vector<std::string>& binary_extra,
      const std::vector<std::string>& text_extra) {
    std::vector<std::string> base = RelayArgs();
    base.insert(base.end(), {"--set", "postgres.plugin=pgoutput"});
    base.insert(base.end(), common.begin(), common.end());
    auto binary_args = base;
    binary_args.insert(binary_args.end(),
                       {"--set", "postgres.publication=" + slot_ + "_pub"});
    binary_args.insert(binary_args.end(), binary_extra.begin(),
                       binary_extra.end());
    auto text_args = base;
    for (size_t i = 0; i + 1 < text_args.size(); ++i) {
      if (text_args[i] == "--slot") text_args[i + 1] = slot_ + "_t";
    }
    text_args.insert(text_args.end(),
                     {"--set", "postgres.publication=" + slot_ + "_tpub",
                      "--set", "postgres.pgoutput_binary=off", "--set",
                      "postgres.state_dir=" + StateDir() + "/t"});
    text_args.insert(text_args.end(), text_extra.begin(), text_extra.end());
    relay_ = Process::Start(binary_args, dir_ + "/binary.log");
    auto text = Process::Start(text_args, dir_ + "/text.log");
    const bool both = WaitUntil(
        [&] {
          return db_->Scalar(
                     "SELECT count(*) FROM pg_replication_slots WHERE "
                     "active AND slot_name IN ('" +
                     slot_ + "', '" + slot_ + "_t')") == "2";
        },
        30000);
    EXPECT_TRUE(both) << relay_->Output() << text->Output();
    EXPECT_THAT(StartReplicationCommand(slot_),
                ::testing::HasSubstr("binary 'true'"));
    EXPECT_THAT(StartReplicationCommand(slot_ + "_t"),
                ::testing::Not(::testing::HasSubstr("binary")));
    return both ? std::move(text) : nullptr;
  }
};

}  // namespace outbox::testing

#endif  // OUTBOX_TESTS_E2E_RELAY_PGOUTPUT_BINARY_E2E_FIXTURE_H_
