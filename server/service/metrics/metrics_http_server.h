// The Prometheus endpoint: GET /metrics (text format 0.0.4) over HTTP,
// served by GNU libmicrohttpd (Debian's libmicrohttpd-dev).
//
// Why not prometheus-cpp's Exposer: its civetweb server fails to start in a
// process that links libtorch_cpu 1.13 (mg_start returns null after binding;
// reproduced with a 5-line program linked against -ltorch_cpu). The text
// itself still comes from prometheus-cpp's TextSerializer.
//
// Why a library and a pool: the hand-written one-thread server this
// replaces answered one connection at a time, so one client sending a byte
// every 1.5 s held a scrape for its whole 20 s timeout. Here a pool of
// kThreads threads polls every connection, each connection is dropped after
// kConnectionTimeoutS seconds without activity, and at most kMaxConnections
// are open at once, so slow or idle clients cannot starve a scrape.
//
// Thread-safe to destroy from any thread; `body` is called from the pool's
// threads, possibly at the same time.
#ifndef BERTOLOGY_SERVICE_METRICS_METRICS_HTTP_SERVER_H_
#define BERTOLOGY_SERVICE_METRICS_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace bertology {

class MetricsHttpServer {
 public:
  static constexpr int kThreads = 4;
  static constexpr int kConnectionTimeoutS = 5;
  static constexpr int kMaxConnections = 256;

  // `listen` is "HOST:PORT" (port 0 picks a free port; an empty host or
  // "[::]" binds every address). `body` renders the response to GET
  // /metrics (and GET /); other paths get 404, other methods 405.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> body);
  ~MetricsHttpServer();  // stops the pool, closes the socket

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::function<std::string()> body_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_METRICS_METRICS_HTTP_SERVER_H_
