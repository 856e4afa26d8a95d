#ifndef BERTOLOGY_SERVER_CORE_CHECKPOINT_FILE_DIGEST_H_
#define BERTOLOGY_SERVER_CORE_CHECKPOINT_FILE_DIGEST_H_

#include <string>

#include "absl/status/statusor.h"

namespace bertology {

// The SHA-256 of a file's bytes as 64 lower-case hex digits: what
// `sha256sum FILE` prints. A model's identity is built on it (not on the
// file's size and mtime), so copies of one checkpoint (`cp -R` in an init
// container, another volume) are one model to the sweep scheduler and the
// merger, and any edit of the weights is another. Reads the file in 1 MiB
// blocks; NOT_FOUND or DATA_LOSS naming the file where it cannot.
// Thread-safe (no shared state).
absl::StatusOr<std::string> FileSha256(const std::string& path);

}  // namespace bertology

#endif  // BERTOLOGY_SERVER_CORE_CHECKPOINT_FILE_DIGEST_H_
