// How a client proves itself to bertology-server and checks the server:
// TLS with a CA to trust, an optional client certificate (mutual TLS), and
// an optional bearer token. Shared by the CLI's commands and the sweep
// scheduler, which opens one channel per replica.
#ifndef BERTOLOGY_CLIENT_TRANSPORT_CHANNEL_SECURITY_H_
#define BERTOLOGY_CLIENT_TRANSPORT_CHANNEL_SECURITY_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bertology {
namespace client {

// Paths are files as given on the command line (--tls-ca, ...). Any of
// tls_ca, tls_cert or tls_key turns TLS on.
struct ChannelSecurity {
  std::string tls_ca;    // PEM CA bundle to verify the server; empty: the
                         // system's roots
  std::string tls_cert;  // PEM client certificate chain, with tls_key
  std::string tls_key;
  // The name the server's certificate must carry when it differs from the
  // target's host (a replica reached by its pod IP, from DNS).
  std::string tls_server_name;
  // A file whose first word (comments with # and blank lines skipped) is
  // the bearer token. Re-read for every call, so a rotated token is used
  // from the next call on.
  std::string token_file;

  bool tls() const {
    return !tls_ca.empty() || !tls_cert.empty() || !tls_key.empty();
  }
};

// Insecure credentials unless tls(); an unreadable file is named.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsFor(
    const ChannelSecurity& security);

// Adds what `security` needs to the channel's arguments (the server name).
void AddChannelSecurityArgs(const ChannelSecurity& security,
                            grpc::ChannelArguments* args);

// Adds `authorization: Bearer TOKEN` when a token file is set; an
// unreadable or empty file is an error naming it.
absl::Status AttachToken(const ChannelSecurity& security,
                         grpc::ClientContext* context);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_TRANSPORT_CHANNEL_SECURITY_H_
