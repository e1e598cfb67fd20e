// The two Status macros Abseil 20220623 lacks.
#ifndef OUTBOX_STATUS_MACROS_H_
#define OUTBOX_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define OUTBOX_CONCAT_INNER_(a, b) a##b
#define OUTBOX_CONCAT_(a, b) OUTBOX_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status outbox_status_ = (expr);          \
    if (!outbox_status_.ok()) return outbox_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(OUTBOX_CONCAT_(outbox_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // OUTBOX_STATUS_MACROS_H_
