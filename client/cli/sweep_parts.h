// `bertology sweep` as one part of an Indexed Job (--part=I/N) and the step
// that merges the parts (--merge-from=FILE or a glob of the part files).
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_PARTS_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_PARTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {
namespace client {

// "I/N" with 0 <= I < N -> (I, N). INVALID_ARGUMENT naming --part otherwise.
absl::StatusOr<std::pair<int, int>> ParsePart(const std::string& value);

// Each --merge-from value: a file, or a glob(3) pattern expanded in sorted
// order. NOT_FOUND for a plain path that does not exist; a pattern that
// matches nothing is an error too (a merge over no parts is a mistake).
absl::StatusOr<std::vector<std::string>> ExpandMergeFrom(
    const std::vector<std::string>& values);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_PARTS_H_
