// bertology-server as a library: Start() listens, loads the models, warms
// them up and marks health SERVING; Shutdown() drains. gRPC stays behind a
// pimpl, so users of this header (main.cc, tests) need no gRPC headers.
//
// Lifecycle promised to clients: the port accepts calls as soon as Start()
// begins loading, with health (grpc.health.v1, service "" and
// "bertology.v1.Bertology") NOT_SERVING and model RPCs UNAVAILABLE until
// every model is loaded and warmed. A model that fails to load makes Start()
// fail with the reason. Shutdown() turns health NOT_SERVING, stops accepting
// calls and lets in-flight calls finish for up to the grace period, then
// cancels the rest.
#ifndef BERTOLOGY_SERVICE_RPC_SERVER_H_
#define BERTOLOGY_SERVICE_RPC_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/service/registry/service_limits.h"

namespace bertology {

struct ServedModelSpec {
  std::string name;
  std::string dir;
};

struct ServerOptions {
  std::vector<ServedModelSpec> models;   // the first is the default
  std::string listen = "0.0.0.0:50051";  // port 0 picks a free port
  std::string metrics_listen;            // empty: no metrics HTTP server
  int threads = 0;       // compute intra/inter-op threads; 0 keeps defaults
  int blas_threads = 0;  // OpenBLAS pthreads when loaded; 0 keeps default
  std::string device = "cpu";
  // Compute dtype of every model (ModelOptions::dtype): auto (F32 on CPU;
  // on CUDA BF16 from compute capability 8.0, else the file's), F32, BF16
  // (opt-in on CPU: fast where oneDNN has AVX-512 BF16/AMX,
  // bench/RESULTS.md), F16 (CUDA only).
  std::string dtype = "auto";
  std::string attention = "auto";  // ModelOptions::attention
  bool tf32 = true;                // ModelOptions::tf32 (CUDA only)
  int max_sweeps_per_device = 2;   // ModelLoadOptions (CUDA only)
  int max_seq_len = 0;             // 0: each model's own maximum
  absl::Duration max_queue_delay = absl::Microseconds(2000);
  int max_queued_rows = 4096;
  int batch_workers = 1;
  int sweep_workers = 0;        // per sweep; 0: AutoSweepWorkers per model
  int max_reference_sets = 16;  // statistics sets held per model
  int warmup_passes = 3;
  absl::Duration max_connection_age = absl::ZeroDuration();  // 0: unlimited
  // How long calls on an aged connection may still run before it is closed
  // under them. 0: unlimited (gRPC's default): the connection closes when its
  // last call ends, so a long sweep stream is never cut; clients' deadlines
  // bound it.
  absl::Duration max_connection_age_grace = absl::ZeroDuration();
  std::string tls_cert_file;  // both or neither; PEM
  std::string tls_key_file;
  // PEM CA bundle: bertology.v1 calls need a client certificate it signed
  // (mutual TLS; needs tls_cert_file). Health stays open (authorizer.h).
  std::string tls_client_ca_file;
  // Bearer tokens with scopes (token_file.h); reloaded when it changes.
  std::string token_file;
  ServiceLimits limits;
  // Called once the ports are bound, before the models load (the port is
  // useful to print then: health answers NOT_SERVING while loading).
  std::function<void(int port, int metrics_port)> on_listening;
};

class Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options);
  ~Server();  // Shutdown(zero grace) if not yet shut down

  int port() const;
  int metrics_port() const;

  // Idempotent and thread-safe (e.g. from a signal-handling thread while
  // another thread is in Wait()). Returns when the drain is over.
  void Shutdown(absl::Duration grace);
  // Blocks until Shutdown() has finished.
  void Wait();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_RPC_SERVER_H_
