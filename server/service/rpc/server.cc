#include "server/service/rpc/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "server/core/process/threading.h"
#include "server/service/metrics/metrics.h"
#include "server/service/registry/model_registry.h"
#include "server/service/rpc/bertology_service.h"
#include "server/service/security/authorizer.h"

namespace bertology {
namespace {

constexpr char kServiceName[] = "bertology.v1.Bertology";

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(flag, "=", path, ": cannot read"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) {
    if (!o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs TLS: give --tls_cert and --tls_key too");
    }
    return grpc::InsecureServerCredentials();
  }
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key must be given together");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain, ReadFile(o.tls_cert_file, "--tls_cert"));
  ASSIGN_OR_RETURN(pair.private_key, ReadFile(o.tls_key_file, "--tls_key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!o.tls_client_ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadFile(o.tls_client_ca_file, "--tls_client_ca"));
    // Request, verify when sent, but do not require: a client without a
    // certificate completes the handshake so health probes work, and the
    // Authorizer refuses its bertology.v1 calls. A certificate the CA did
    // not sign, or an expired one, fails the handshake.
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::unique_ptr<ServiceMetrics> metrics;
  ModelRegistry registry;
  std::unique_ptr<Authorizer> authorizer;  // null: every caller allowed
  std::unique_ptr<BertologyService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  absl::Mutex mu;
  bool shutdown_started ABSL_GUARDED_BY(mu) = false;
  absl::Notification shutdown_done;

  void SetServing(bool serving) {
    grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
    if (health == nullptr) return;
    health->SetServingStatus(serving);
    health->SetServingStatus(kServiceName, serving);
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_ != nullptr && impl_->server != nullptr) {
    Shutdown(absl::ZeroDuration());
  }
}

int Server::port() const { return impl_->port; }
int Server::metrics_port() const { return impl_->metrics->port(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  if (options.models.empty()) {
    return absl::InvalidArgumentError(
        "no model to serve: give --model=NAME=DIR at least once");
  }
  if (options.max_connection_age < absl::ZeroDuration() ||
      options.max_connection_age_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--max_connection_age_s and --max_connection_age_grace_s must be >= "
        "0 (0: no limit)");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const ServerOptions& o = impl->options;
  ASSIGN_OR_RETURN(impl->metrics, ServiceMetrics::Create(o.metrics_listen));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   Credentials(o));

  HandlerContext ctx;
  ctx.models = &impl->registry;
  ctx.limits = &impl->options.limits;
  ctx.metrics = impl->metrics.get();
  if (!o.tls_client_ca_file.empty() || !o.token_file.empty()) {
    std::unique_ptr<TokenFile> tokens;
    if (!o.token_file.empty()) {
      ASSIGN_OR_RETURN(tokens, TokenFile::Open(o.token_file));
    }
    impl->authorizer = std::make_unique<Authorizer>(
        !o.tls_client_ca_file.empty(), std::move(tokens));
  }
  impl->service =
      std::make_unique<BertologyService>(ctx, impl->authorizer.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.SetMaxReceiveMessageSize(o.limits.max_message_bytes);
  builder.SetMaxSendMessageSize(o.limits.max_message_bytes);
  if (o.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(absl::ToInt64Milliseconds(o.max_connection_age)));
    // Left unset, gRPC lets calls on an aged connection run to their own
    // deadlines (the grace is infinite); only new calls move to a new
    // connection, which is what makes clients re-resolve DNS.
    if (o.max_connection_age_grace > absl::ZeroDuration()) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                                 static_cast<int>(absl::ToInt64Milliseconds(
                                     o.max_connection_age_grace)));
    }
  }
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen=", o.listen, ": cannot listen there"));
  }
  impl->SetServing(false);
  if (o.on_listening) o.on_listening(impl->port, impl->metrics->port());

  ConfigureThreads(o.threads, o.blas_threads, /*inter_op=*/o.threads);
  ServiceMetrics* metrics = impl->metrics.get();
  for (const ServedModelSpec& spec : o.models) {
    ModelLoadOptions load;
    load.name = spec.name;
    load.dir = spec.dir;
    load.device = o.device;
    load.dtype = o.dtype;
    load.attention = o.attention;
    load.tf32 = o.tf32;
    load.max_sweeps_per_device = o.max_sweeps_per_device;
    load.max_seq_len = o.max_seq_len;
    load.max_batch_size = o.limits.max_batch_size;
    load.max_queue_delay = o.max_queue_delay;
    load.max_queued_rows = o.max_queued_rows;
    load.batch_workers = o.batch_workers;
    load.sweep_workers = o.sweep_workers;
    load.max_reference_sets = o.max_reference_sets;
    load.warmup_passes = o.warmup_passes;
    load.on_batch = [metrics](int rows,
                              const std::vector<absl::Duration>& waits) {
      metrics->RecordBatch(rows, waits);
    };
    absl::Status status = impl->registry.Load(load);
    if (!status.ok()) {
      impl->server->Shutdown(std::chrono::system_clock::now());
      impl->server->Wait();
      impl->server.reset();
      return status;
    }
  }
  impl->registry.MarkReady();
  for (const ModelSummary& m : impl->registry.Summaries()) {
    metrics->SetModelInfo({m.name, m.device, m.dtype, absl::StrCat(m.layers),
                           absl::StrCat(m.heads)});
  }
  impl->SetServing(true);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Shutdown(absl::Duration grace) {
  bool first;
  {
    absl::MutexLock lock(&impl_->mu);
    first = !impl_->shutdown_started;
    impl_->shutdown_started = true;
  }
  if (!first) {  // another thread drains; wait for it
    impl_->shutdown_done.WaitForNotification();
    return;
  }
  // NOT_SERVING for every service, told to Watch streams too, and frozen.
  if (auto* health = impl_->server->GetHealthCheckService()) {
    health->Shutdown();
  }
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(grace));
  impl_->registry.Shutdown();
  impl_->shutdown_done.Notify();
}

void Server::Wait() { impl_->shutdown_done.WaitForNotification(); }

}  // namespace bertology
