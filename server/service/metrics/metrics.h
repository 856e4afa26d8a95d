// The server's Prometheus metrics (prometheus-cpp), served over HTTP on
// --metrics_listen (see metrics_http_server.h). Names follow Prometheus
// conventions: `bertology_` prefix, base units (`_seconds`), `_total` counters,
// and only low-cardinality labels (method, code, model).
//
// Thread-safe: every recording method may be called from any thread.
#ifndef BERTOLOGY_SERVICE_METRICS_METRICS_H_
#define BERTOLOGY_SERVICE_METRICS_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prometheus {
class Collectable;
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace bertology {

class MetricsHttpServer;

// What the kernel says about this process, read from /proc/self (Linux).
struct ProcessStats {
  double cpu_seconds = 0;         // user + system
  double resident_bytes = 0;      // RSS
  double virtual_bytes = 0;       // VSZ
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0;            // entries of /proc/self/fd
  double max_fds = 0;             // soft RLIMIT_NOFILE
};
// UNAVAILABLE where /proc/self/stat cannot be read or parsed (not Linux).
absl::StatusOr<ProcessStats> ReadProcessStats();

// A prometheus-cpp Collectable giving the standard process metrics of the
// Prometheus client libraries (process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds, process_open_fds, process_max_fds), read at
// each Collect() so a scrape sees the values of that moment. Collect()
// returns nothing where /proc is unreadable rather than made-up zeros.
std::shared_ptr<prometheus::Collectable> MakeProcessCollector();

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
  // bertology_queue_wait_seconds (its mean per replica is the HPA's Pods
  // metric: the name is part of the deploy contract).
  void RecordBatch(int rows, const std::vector<absl::Duration>& waits);
  // bertology_inflight_rows: (mask, example) rows accepted and not finished
  // on this replica: Classify rows handed to the batcher and not yet
  // answered, plus unscored pairs of running sweeps (added by StartSweep,
  // taken back as they are scored or when the call ends). For dashboards,
  // not the HPA: one sweep fills it on every replica, whatever their number
  // (deploy/k8s/base/hpa.yaml).
  void AddInflightRows(int64_t delta);
  // bertology_examples_processed_total{model} (Classify inputs).
  void AddExamples(const std::string& model, int n);
  // bertology_masks_processed_total{model} (sweep masks finished).
  void AddMasks(const std::string& model, int n);
  // bertology_sweep_batch_splits_total{model}: a sweep's forward pass ran
  // out of device memory and runs again as two halves. Thread-safe.
  void AddBatchSplit(const std::string& model);

  // One running SweepAblation call's share of the sweep metrics. While it
  // lives, its planned and scored pairs are part of the gauges
  // bertology_sweep_pairs_planned{model} and bertology_sweep_pairs_scored
  // {model} (so scored/planned is the progress of the work running now),
  // its unscored pairs part of bertology_inflight_rows, and it counts in
  // bertology_sweeps_active. The destructor takes all of that back, on every
  // path out of the handler (exceptions included). The lifetime counters
  // bertology_sweep_pairs_total (planned) and bertology_sweep_pairs_done_total
  // (really scored) are for rate(); pairs never scored are counted in
  // bertology_sweep_pairs_abandoned_total{reason}, never as done.
  // Not thread-safe itself: one handler drives it.
  class SweepRecorder {
   public:
    SweepRecorder(const SweepRecorder&) = delete;
    SweepRecorder& operator=(const SweepRecorder&) = delete;
    ~SweepRecorder();
    // `n` more pairs scored (n >= 0; more than planned is clamped).
    void AddScored(int64_t n);
    // How the call ended: its unscored pairs are abandoned with reason
    // "cancelled" (CANCELLED or DEADLINE_EXCEEDED: the client stopped
    // waiting) or "failed" (any other status, or OK with pairs unscored,
    // which would be a bug). Only the first call counts; without one, the
    // destructor counts them as "failed".
    void Finish(const absl::Status& status);
    int64_t scored() const { return scored_; }

   private:
    friend class ServiceMetrics;
    SweepRecorder(ServiceMetrics* metrics, std::string model, int64_t planned);
    ServiceMetrics* metrics_;
    std::string model_;
    int64_t planned_;
    int64_t scored_ = 0;
    bool finished_ = false;
  };
  // A sweep of `planned` (mask, example) pairs, baseline included, on
  // `model` has started.
  std::unique_ptr<SweepRecorder> StartSweep(const std::string& model,
                                            int64_t planned);
  // The text a scrape of /metrics returns (also without --metrics_listen).
  std::string Render() const;
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
  prometheus::Family<prometheus::Counter>* batch_splits_ = nullptr;
  std::shared_ptr<prometheus::Collectable> process_;
  prometheus::Gauge* inflight_rows_ = nullptr;
  prometheus::Counter* sweep_pairs_ = nullptr;
  prometheus::Counter* sweep_pairs_done_ = nullptr;
  prometheus::Family<prometheus::Counter>* sweep_pairs_abandoned_ = nullptr;
  prometheus::Family<prometheus::Gauge>* sweep_pairs_planned_now_ = nullptr;
  prometheus::Family<prometheus::Gauge>* sweep_pairs_scored_now_ = nullptr;
  prometheus::Gauge* sweeps_active_ = nullptr;
  prometheus::Family<prometheus::Gauge>* model_info_ = nullptr;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_METRICS_METRICS_H_
