#include "server/core/checkpoint/file_digest.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace bertology {

absl::StatusOr<std::string> FileSha256(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(
      std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read ", path, " for its digest: ", std::strerror(errno)));
  }
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(),
                                                         &EVP_MD_CTX_free);
  if (ctx == nullptr ||
      EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("OpenSSL could not start a SHA-256");
  }
  std::vector<unsigned char> block(1 << 20);
  size_t n = 0;
  while ((n = std::fread(block.data(), 1, block.size(), f.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), block.data(), n);
  }
  if (std::ferror(f.get())) {
    return absl::DataLossError(
        absl::StrCat("error reading ", path, " for its digest"));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace bertology
