// The models a server serves, by name, each with its own Classify batcher.
//
// Filled once at start-up (Load, then MarkReady); read-only afterwards, so
// Find() may be called from any thread. Before MarkReady() every Find() is
// UNAVAILABLE: the server answers health checks while models load.
#ifndef BERTOLOGY_SERVICE_REGISTRY_MODEL_REGISTRY_H_
#define BERTOLOGY_SERVICE_REGISTRY_MODEL_REGISTRY_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bertology {

class Model;
class Batcher;
class RowBudget;
class ReferenceStore;

struct ServedModel {
  ServedModel();
  ~ServedModel();
  std::string name;
  std::unique_ptr<Model> model;
  // Joins concurrent Classify rows; null for an encoder-only model (no
  // logits to batch: Classify answers FAILED_PRECONDITION before using it).
  std::unique_ptr<Batcher> batcher;
  // The batch rows of the sweeps running on this model, at most
  // --max_queued_rows (row_budget.h): a sweep that does not fit is refused
  // with RESOURCE_EXHAUSTED when it starts.
  std::unique_ptr<RowBudget> sweep_rows;
  // On a GPU, the sweeps running on its device (shared by every model on
  // it), at most --max_sweeps_per_device; each then sizes its batches from
  // the device's free memory. Null on CPU, where sweep_rows admits sweeps.
  std::shared_ptr<RowBudget> device_sweeps;
  // Threads each SweepAblation call runs its forward passes on
  // (SweepOptions::workers): --sweep_workers, or AutoSweepWorkers.
  int sweep_workers = 1;
  // Reference statistics for mean / resample ablation (reference_store.h).
  std::unique_ptr<ReferenceStore> references;

  // GetModelInfo's identity: the model's (weights digest, dtype,
  // max_seq_len) and this server's version.
  std::string identity() const;
};

struct ModelLoadOptions {
  std::string name;
  std::string dir;
  std::string device = "cpu";
  std::string dtype = "auto";      // ModelOptions::dtype
  std::string attention = "auto";  // ModelOptions::attention
  bool tf32 = true;                // ModelOptions::tf32
  // Sweeps running at once on one GPU (ServedModel::device_sweeps).
  int max_sweeps_per_device = 2;
  int max_seq_len = 0;  // 0: the model's own maximum
  // Batcher knobs (see server/service/registry/batcher.h).
  int max_batch_size = 32;
  absl::Duration max_queue_delay = absl::Microseconds(2000);
  // Classify rows queued, and separately the batch rows of running sweeps.
  int max_queued_rows = 4096;
  int batch_workers = 1;
  // SweepOptions::workers of each sweep; 0: AutoSweepWorkers(model).
  int sweep_workers = 0;
  // Reference statistics sets held at once (the oldest dropped beyond).
  int max_reference_sets = 16;
  // Full-size forward passes run before the model is marked ready, so the
  // first real request does not pay for allocation and kernel set-up.
  int warmup_passes = 3;
  // Called once per batched Classify forward pass with its row count and
  // each row's queue wait (for metrics). May be empty.
  std::function<void(int rows, const std::vector<absl::Duration>& waits)>
      on_batch;
};

// What the metrics and logs say about a loaded model.
struct ModelSummary {
  std::string name, device, dtype;
  int layers = 0, heads = 0;
};

class ModelRegistry {
 public:
  ModelRegistry() = default;
  ~ModelRegistry();

  // Loads, wraps in a batcher (if it has a classifier) and warms up one
  // model; logs one line listing weights keys the model does not use.
  // Errors name the model and its directory. The first model loaded is the
  // default. Not thread-safe; call before MarkReady().
  absl::Status Load(const ModelLoadOptions& options);
  void MarkReady() { ready_.store(true, std::memory_order_release); }
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  // "" is the default model. UNAVAILABLE before MarkReady(); NOT_FOUND
  // (listing the loaded names) for an unknown name.
  absl::StatusOr<const ServedModel*> Find(const std::string& name) const;
  // Loaded models, default first (empty before MarkReady()).
  std::vector<const ServedModel*> All() const;
  std::vector<ModelSummary> Summaries() const;

  // Stops every batcher (finishing queued work). Idempotent; not
  // thread-safe.
  void Shutdown();

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  // ServedModel::device_sweeps by device ("cuda:0").
  std::map<std::string, std::shared_ptr<RowBudget>> device_sweeps_;
  std::atomic<bool> ready_{false};
  bool shut_down_ = false;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_MODEL_REGISTRY_H_
