#include "server/service/security/authorizer.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace bertology {

bool IsReadOnlyRpc(absl::string_view rpc) {
  return rpc == "GetModelInfo" || rpc == "Tokenize" || rpc == "Classify" ||
         rpc == "GetAttention";
}

const char* ReadOnlyRpcs() {
  return "GetModelInfo, Tokenize, Classify, GetAttention";
}

absl::Status Authorizer::Check(absl::string_view rpc,
                               const CallCredentials& credentials) const {
  if (require_client_cert_ && !credentials.client_cert_verified) {
    return absl::UnauthenticatedError(
        absl::StrCat(rpc,
                     ": this server requires a client certificate signed by "
                     "its --tls_client_ca (give the client --tls-cert and "
                     "--tls-key)"));
  }
  if (tokens_ == nullptr) return absl::OkStatus();
  if (!credentials.authorization.has_value()) {
    return absl::UnauthenticatedError(absl::StrCat(
        rpc,
        ": missing bearer token (metadata 'authorization: Bearer TOKEN'; "
        "the CLI's --token-file)"));
  }
  absl::string_view value = *credentials.authorization;
  if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
    return absl::UnauthenticatedError(absl::StrCat(
        rpc, ": the authorization metadata is not 'Bearer TOKEN'"));
  }
  value = absl::StripAsciiWhitespace(value.substr(7));
  absl::StatusOr<TokenScope> scope = tokens_->Lookup(value);
  if (absl::IsNotFound(scope.status())) {
    return absl::UnauthenticatedError(absl::StrCat(rpc, ": invalid token"));
  }
  if (!scope.ok()) {
    return absl::UnavailableError(absl::StrCat(
        rpc,
        ": the server cannot check tokens now: ", scope.status().message()));
  }
  if (*scope == TokenScope::kReadOnly && !IsReadOnlyRpc(rpc)) {
    return absl::PermissionDeniedError(
        absl::StrCat(rpc, ": this token is readonly; it may call ",
                     ReadOnlyRpcs(), ", not ", rpc));
  }
  return absl::OkStatus();
}

}  // namespace bertology
