#include "client/transport/channel_security.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology {
namespace client {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(flag, "=", path, ": cannot read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const ChannelSecurity& security) {
  if (!security.tls()) return grpc::InsecureChannelCredentials();
  if (security.tls_cert.empty() != security.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key must be given together");
  }
  grpc::SslCredentialsOptions ssl;
  if (!security.tls_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(security.tls_ca, "--tls-ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!security.tls_cert.empty()) {
    absl::StatusOr<std::string> cert =
        ReadFile(security.tls_cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile(security.tls_key, "--tls-key");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

void AddChannelSecurityArgs(const ChannelSecurity& security,
                            grpc::ChannelArguments* args) {
  if (security.tls() && !security.tls_server_name.empty()) {
    args->SetSslTargetNameOverride(security.tls_server_name);
  }
}

absl::Status AttachToken(const ChannelSecurity& security,
                         grpc::ClientContext* context) {
  if (security.token_file.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> text =
      ReadFile(security.token_file, "--token-file");
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    context->AddMetadata("authorization", absl::StrCat("Bearer ", words[0]));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--token-file=", security.token_file, ": no token in it"));
}

}  // namespace client
}  // namespace bertology
