// Who may call which RPC: the policy behind --tls_client_ca and
// --token_file, with no gRPC in it (bertology_service.cc reads the call's
// certificate state and `authorization` metadata and asks Check()).
//
//   - With a client CA, every bertology.v1 call needs a client certificate
//     that the CA signed. The TLS handshake already refuses a certificate
//     the CA did not sign or that expired; a client that sent none gets
//     through the handshake (so grpc.health.v1 stays open for probes) and
//     is refused here with UNAUTHENTICATED.
//   - With a token file, every bertology.v1 call needs the metadata
//     `authorization: Bearer TOKEN`: missing or unknown is UNAUTHENTICATED;
//     a readonly token on an RPC outside ReadOnlyRpcs() is
//     PERMISSION_DENIED; a token file that cannot be read now is
//     UNAVAILABLE (fail closed; retry once the file is fixed).
//   - Both may be on at once: a call must pass both.
//
// Thread-safe.
#ifndef BERTOLOGY_SERVICE_SECURITY_AUTHORIZER_H_
#define BERTOLOGY_SERVICE_SECURITY_AUTHORIZER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/service/security/token_file.h"

namespace bertology {

// What the transport knows of a call's caller.
struct CallCredentials {
  bool client_cert_verified = false;         // a certificate the CA signed
  std::optional<std::string> authorization;  // the metadata's value
};

// The RPCs a readonly token may call: reading the model and scoring single
// requests, not the sweeps and analyses that can hold a replica for hours.
bool IsReadOnlyRpc(absl::string_view rpc);
// "GetModelInfo, Tokenize, Classify, GetAttention", for messages and docs.
const char* ReadOnlyRpcs();

class Authorizer {
 public:
  // `tokens` may be null (no token check).
  Authorizer(bool require_client_cert, std::unique_ptr<TokenFile> tokens)
      : require_client_cert_(require_client_cert), tokens_(std::move(tokens)) {}

  absl::Status Check(absl::string_view rpc,
                     const CallCredentials& credentials) const;

 private:
  const bool require_client_cert_;
  const std::unique_ptr<TokenFile> tokens_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_SECURITY_AUTHORIZER_H_
