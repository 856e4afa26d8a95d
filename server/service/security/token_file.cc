#include "server/service/security/token_file.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology {
namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 4096;

std::array<unsigned char, 32> Digest(absl::string_view token) {
  std::array<unsigned char, 32> digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
         digest.data());
  return digest;
}

bool IsTokenChar(char c) { return c > ' ' && c < 127; }

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, TokenScope>>> ParseTokenFile(
    absl::string_view path, absl::string_view text) {
  std::vector<std::pair<std::string, TokenScope>> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto bad = [&](absl::string_view why) {
      // The line itself is not quoted: it holds a secret.
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file=", path, " line ", line_number, ": ", why,
                       " (each line: TOKEN full|readonly)"));
    };
    if (fields.size() != 2) return bad("expected 2 fields");
    const absl::string_view token = fields[0];
    if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
      return bad(absl::StrCat("a token must be ", kMinTokenBytes, " to ",
                              kMaxTokenBytes, " characters, this one has ",
                              token.size()));
    }
    for (char c : token) {
      if (!IsTokenChar(c)) return bad("a token must be printable ASCII");
    }
    TokenScope scope;
    if (fields[1] == "full") {
      scope = TokenScope::kFull;
    } else if (fields[1] == "readonly") {
      scope = TokenScope::kReadOnly;
    } else {
      return bad(absl::StrCat("unknown scope '", fields[1], "'"));
    }
    tokens.emplace_back(std::string(token), scope);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token_file=", path, ": no token in the file"));
  }
  return tokens;
}

absl::StatusOr<std::unique_ptr<TokenFile>> TokenFile::Open(std::string path) {
  std::unique_ptr<TokenFile> file(new TokenFile(std::move(path)));
  absl::MutexLock lock(&file->mu_);
  file->RefreshLocked();
  if (!file->state_.ok()) return file->state_;
  return file;
}

void TokenFile::RefreshLocked() {
  struct stat st;
  Stamp now;
  if (stat(path_.c_str(), &st) == 0) {
    now.inode = st.st_ino;
    now.size = st.st_size;
    now.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  if (now == stamp_ && now.size >= 0) return;
  stamp_ = now;
  entries_.clear();
  std::ifstream in(path_, std::ios::binary);
  if (now.size < 0 || !in) {
    state_ = absl::UnavailableError(
        absl::StrCat("--token_file=", path_, ": cannot read"));
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto tokens = ParseTokenFile(path_, text.str());
  if (!tokens.ok()) {
    state_ = tokens.status();
    return;
  }
  for (const auto& [token, scope] : *tokens) {
    entries_.push_back({Digest(token), scope});
  }
  state_ = absl::OkStatus();
}

absl::StatusOr<TokenScope> TokenFile::Lookup(absl::string_view token) {
  const std::array<unsigned char, 32> digest = Digest(token);
  absl::MutexLock lock(&mu_);
  RefreshLocked();
  if (!state_.ok()) return state_;
  // Every entry is compared, whatever matches, so the time does not tell
  // which token (or whether an early one) matched.
  int match = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const bool equal =
        CRYPTO_memcmp(digest.data(), entries_[i].digest.data(), 32) == 0;
    match = equal ? static_cast<int>(i) : match;
  }
  if (match < 0) return absl::NotFoundError("unknown token");
  return entries_[match].scope;
}

}  // namespace bertology
