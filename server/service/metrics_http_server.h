// A minimal HTTP/1.0 server for GET /metrics (Prometheus text format 0.0.4).
//
// Why not prometheus-cpp's Exposer: its civetweb server fails to start in a
// process that links libtorch_cpu 1.13 (mg_start returns null after binding;
// reproduced with a 5-line program linked against -ltorch_cpu). The text
// itself still comes from prometheus-cpp's TextSerializer.
//
// One thread; each scrape is answered in full before the next is accepted
// (scrapes are rare and small). Thread-safe to destroy from any thread.
#ifndef BERTOLOGY_SERVICE_METRICS_HTTP_SERVER_H_
#define BERTOLOGY_SERVICE_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace bertology {

class MetricsHttpServer {
 public:
  // `listen` is "HOST:PORT" (port 0 picks a free port). `body` renders the
  // response to GET /metrics.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> body);
  ~MetricsHttpServer();  // stops the thread, closes the socket

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Serve();
  int fd_ = -1;
  int port_ = 0;
  std::function<std::string()> body_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_METRICS_HTTP_SERVER_H_
