#include "client/cli/sweep_parts.h"

#include <glob.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology {
namespace client {

absl::StatusOr<std::pair<int, int>> ParsePart(const std::string& value) {
  std::vector<std::string> fields = absl::StrSplit(value, '/');
  int index = -1, count = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &index) ||
      !absl::SimpleAtoi(fields[1], &count) || count < 1 || index < 0 ||
      index >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--part=", value, " is not I/N with 0 <= I < N (e.g. --part=0/4)"));
  }
  return std::make_pair(index, count);
}

absl::StatusOr<std::vector<std::string>> ExpandMergeFrom(
    const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    glob_t g{};
    const int rc = glob(v.c_str(), GLOB_ERR, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc == GLOB_NOMATCH) {
      return absl::NotFoundError(
          absl::StrCat("--merge-from=", v, ": no such file"));
    }
    if (rc != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--merge-from=", v, ": cannot read it"));
    }
  }
  return out;
}

}  // namespace client
}  // namespace bertology
