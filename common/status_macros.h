// Early-return helpers for absl::Status / absl::StatusOr, as in tensorstore
// and many abseil codebases.
#ifndef BERTOLOGY_COMMON_STATUS_MACROS_H_
#define BERTOLOGY_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define BERTOLOGY_CONCAT_INNER_(a, b) a##b
#define BERTOLOGY_CONCAT_(a, b) BERTOLOGY_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` yields a non-OK absl::Status.
#define RETURN_IF_ERROR(expr)    \
  do {                           \
    ::absl::Status _st = (expr); \
    if (!_st.ok()) return _st;   \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr())` declares/assigns `x` from the
// value, or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(BERTOLOGY_CONCAT_(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // BERTOLOGY_COMMON_STATUS_MACROS_H_
