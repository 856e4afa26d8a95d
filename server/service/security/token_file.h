// Bearer tokens from a file (--token_file), reloaded when the file changes.
//
// The file has one token per line, each with its scope:
//
//   # comment
//   <token> full       every RPC
//   <token> readonly   GetModelInfo, Tokenize, Classify, GetAttention
//
// A token is 16 to 4096 printable ASCII characters without spaces (short
// tokens are refused: they can be guessed). Only SHA-256 digests of the
// tokens are kept, and a presented token is hashed and compared against
// every digest with CRYPTO_memcmp, so the time a lookup takes depends on
// neither the tokens' contents nor their lengths.
//
// Reloading: every Lookup() stat()s the file (about a microsecond) and
// re-reads it when its inode, size or modification time changed, which
// covers in-place edits and the symlink swap Kubernetes does for a mounted
// Secret. A file that becomes unreadable or malformed fails closed: every
// lookup is refused, with the reason, until the file is good again.
//
// Thread-safe.
#ifndef BERTOLOGY_SERVICE_SECURITY_TOKEN_FILE_H_
#define BERTOLOGY_SERVICE_SECURITY_TOKEN_FILE_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace bertology {

enum class TokenScope { kReadOnly, kFull };

class TokenFile {
 public:
  // Reads `path` once; an unreadable or malformed file is an error naming
  // the file (and the line).
  static absl::StatusOr<std::unique_ptr<TokenFile>> Open(std::string path);

  // The scope of `token`, NOT_FOUND for an unknown token, or the reason the
  // file cannot be used now (fail closed).
  absl::StatusOr<TokenScope> Lookup(absl::string_view token);

  const std::string& path() const { return path_; }

 private:
  struct Entry {
    std::array<unsigned char, 32> digest;
    TokenScope scope;
  };
  struct Stamp {
    ino_t inode = 0;
    off_t size = -1;
    int64_t mtime_ns = -1;
    bool operator==(const Stamp& o) const {
      return inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
    }
  };

  explicit TokenFile(std::string path) : path_(std::move(path)) {}
  // Re-reads the file if its stamp changed.
  void RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  Stamp stamp_ ABSL_GUARDED_BY(mu_);
  absl::Status state_ ABSL_GUARDED_BY(mu_);  // why the file is unusable
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// Parses the text of a token file; errors name `path` and the line.
absl::StatusOr<std::vector<std::pair<std::string, TokenScope>>> ParseTokenFile(
    absl::string_view path, absl::string_view text);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_SECURITY_TOKEN_FILE_H_
