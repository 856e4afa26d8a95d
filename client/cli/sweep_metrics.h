// `bertology sweep --metrics-listen=HOST:PORT`: the sweep job's own progress
// as Prometheus gauges on GET /metrics, so a cluster sees how far each part
// of an Indexed sweep Job is (the server only knows the calls it runs now).
//
// Gauges, each with the caller's constant labels (the deploy rules expect
// sweep="<fingerprint>" and part="I/N"):
//   bertology_sweep_job_pairs_done       (mask, example) pairs done, resumed
//                                        shards and partial shards included
//   bertology_sweep_job_pairs_total      pairs this run is to do
//   bertology_sweep_job_shards_done      shards finished (resumed included)
//   bertology_sweep_job_shards_total     shards of this run
//   bertology_sweep_job_shards_resumed   shards taken from progress files
//   bertology_sweep_job_retries          shard attempts retried so far
//   bertology_sweep_job_inflight_shards  shard calls in flight now
//   bertology_sweep_job_replicas         server channels in use now
// All start at 0 and hold the last Update() until the exporter is destroyed.
//
// Served by prometheus-cpp's pull Exposer (civetweb). The server cannot use
// it (see server/service/metrics/metrics_http_server.h: civetweb fails to start
// in a process linking libtorch_cpu), but the CLI links no libtorch; checked
// here with Debian 12's prometheus-cpp 1.0.1: "127.0.0.1:0", "0.0.0.0:0" and
// "localhost:0" bind and GetListeningPorts() gives the real port; "[::1]:0"
// does not bind in this build (an IPv6 HOST is reported as an error).
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_METRICS_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_METRICS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/scheduler/sweep_scheduler.h"

namespace prometheus {
class Exposer;
class Gauge;
class Registry;
}  // namespace prometheus

namespace bertology {
namespace client {

class SweepMetricsExporter {
 public:
  // Serves /metrics on `listen` ("HOST:PORT", HOST an address or name,
  // empty for all interfaces; PORT 0 picks a free port). `labels` are put
  // on every gauge. INVALID_ARGUMENT for a malformed `listen` or label
  // name, UNAVAILABLE when it cannot bind.
  static absl::StatusOr<std::unique_ptr<SweepMetricsExporter>> Start(
      const std::string& listen, std::map<std::string, std::string> labels);
  ~SweepMetricsExporter();  // stops serving

  // Sets every gauge from `s`. Thread-safe (the gauges are atomic).
  void Update(const SweepProgressSnapshot& s);

  // The bound port.
  int port() const { return port_; }

 private:
  SweepMetricsExporter() = default;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  prometheus::Gauge* pairs_done_ = nullptr;
  prometheus::Gauge* pairs_total_ = nullptr;
  prometheus::Gauge* shards_done_ = nullptr;
  prometheus::Gauge* shards_total_ = nullptr;
  prometheus::Gauge* shards_resumed_ = nullptr;
  prometheus::Gauge* retries_ = nullptr;
  prometheus::Gauge* inflight_ = nullptr;
  prometheus::Gauge* replicas_ = nullptr;
};

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_METRICS_H_
