// The version of this build: CMake's project VERSION and the git revision
// the binaries were built from (src/common/version.cc.in, filled in at every
// build by cmake/version_info.cmake).
#ifndef OUTBOX_COMMON_VERSION_H_
#define OUTBOX_COMMON_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace outbox {

// "0.1.0": the project's VERSION in the top-level CMakeLists.txt.
const char* Version();

// The commit's abbreviated hash, with "-dirty" when tracked files differed
// from it; the OUTBOX_GIT_REVISION cache variable when set; "unknown" when
// built without git metadata (a source tarball).
const char* GitRevision();

// What --version prints: "outbox-relay 0.1.0 (git 6593be9abcde)".
std::string VersionLine(absl::string_view program);

}  // namespace outbox

#endif  // OUTBOX_COMMON_VERSION_H_
