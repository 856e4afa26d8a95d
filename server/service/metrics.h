// The server's Prometheus metrics (prometheus-cpp), served over HTTP on
// --metrics_listen (see metrics_http_server.h). Names follow Prometheus
// conventions: `bertology_` prefix, base units (`_seconds`), `_total` counters,
// and only low-cardinality labels (method, code, model).
//
// Thread-safe: every recording method may be called from any thread.
#ifndef BERTOLOGY_SERVICE_METRICS_H_
#define BERTOLOGY_SERVICE_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace bertology {

class MetricsHttpServer;

struct ModelInfoLabels {
  std::string model, device, dtype, layers, heads;
};

class ServiceMetrics {
 public:
  // `listen` is "HOST:PORT" (port 0 picks a free one); empty: metrics are
  // recorded but not served.
  static absl::StatusOr<std::unique_ptr<ServiceMetrics>> Create(
      const std::string& listen);
  ~ServiceMetrics();

  // The bound HTTP port, or 0 when not serving.
  int port() const { return port_; }

  // One finished RPC: bertology_requests_total{method,code} and
  // bertology_request_duration_seconds{method}.
  void RecordRequest(const std::string& method, const std::string& code,
                     absl::Duration duration);
  // bertology_inflight_requests.
  void AddInflight(int delta);
  // One batched forward pass: bertology_batch_size and, per row,
  // bertology_queue_wait_seconds.
  void RecordBatch(int rows, const std::vector<absl::Duration>& waits);
  // bertology_examples_processed_total{model} (Classify inputs).
  void AddExamples(const std::string& model, int n);
  // bertology_masks_processed_total{model} (sweep masks finished).
  void AddMasks(const std::string& model, int n);
  // Sweep (mask, example) pairs: bertology_sweep_pairs_total (planned) and
  // bertology_sweep_pairs_done_total; their ratio is the progress of all
  // sweeps. bertology_sweeps_active counts running sweeps.
  void AddSweepPairsPlanned(int64_t n);
  void AddSweepPairsDone(int64_t n);
  void AddActiveSweeps(int delta);
  // bertology_model_info{model,device,dtype,layers,heads} = 1.
  void SetModelInfo(const ModelInfoLabels& labels);

 private:
  ServiceMetrics() = default;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsHttpServer> http_;
  int port_ = 0;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
  prometheus::Gauge* inflight_ = nullptr;
  prometheus::Histogram* batch_size_ = nullptr;
  prometheus::Histogram* queue_wait_ = nullptr;
  prometheus::Family<prometheus::Counter>* examples_ = nullptr;
  prometheus::Family<prometheus::Counter>* masks_ = nullptr;
  prometheus::Counter* sweep_pairs_ = nullptr;
  prometheus::Counter* sweep_pairs_done_ = nullptr;
  prometheus::Gauge* sweeps_active_ = nullptr;
  prometheus::Family<prometheus::Gauge>* model_info_ = nullptr;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_METRICS_H_
