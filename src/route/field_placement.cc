#include "route/field_placement.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace outbox {

absl::StatusOr<std::vector<FieldPlacement>> ParseFieldPlacements(
    absl::string_view spec) {
  std::vector<FieldPlacement> out;
  bool partition = false;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("outbox.fields: \"", entry, "\": ", why));
    };
    if (parts.size() < 2 || parts.size() > 3) {
      return bad("expected column:header|envelope|partition[:name]");
    }
    FieldPlacement f;
    f.column = std::string(absl::StripAsciiWhitespace(parts[0]));
    absl::string_view where = absl::StripAsciiWhitespace(parts[1]);
    f.name = parts.size() == 3
                 ? std::string(absl::StripAsciiWhitespace(parts[2]))
                 : f.column;
    if (f.column.empty() || f.name.empty()) return bad("empty name");
    if (where == "header") {
      f.where = FieldPlacement::Where::kHeader;
      if (f.name == "id") {
        return bad("header \"id\" is reserved for the event id");
      }
    } else if (where == "envelope") {
      f.where = FieldPlacement::Where::kEnvelope;
      if (f.name == "payload") {
        return bad("envelope field \"payload\" is the payload's");
      }
    } else if (where == "partition") {
      f.where = FieldPlacement::Where::kPartition;
      if (parts.size() == 3) return bad("a partition column has no name");
      if (partition) return bad("only one column can pick the partition");
      partition = true;
      f.name.clear();
    } else {
      return bad(absl::StrCat("unknown placement \"", where,
                              "\" (header, envelope or partition)"));
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace outbox
