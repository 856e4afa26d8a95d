// Dynamic batching of Classify rows across concurrent requests.
//
// Rows (an encoding plus its own head mask) from any number of requests are
// queued; worker threads take up to `max_batch_size` rows, waiting at most
// `max_queue_delay` after the oldest queued row, group them by length to
// keep padding small, and run one forward pass with per-row masks. Each
// request's callback runs once, with its rows' logits in order. A full queue
// rejects new work with RESOURCE_EXHAUSTED instead of growing without bound.
//
// Batch selection: the oldest queued row always goes in the next batch (no
// starvation); the rest of the batch is filled with the queued rows nearest
// to it in length. A failed forward pass fails every request with a row in
// it (their other rows are dropped from the queue); other requests are
// unaffected.
#ifndef BERTOLOGY_SERVICE_REGISTRY_BATCHER_H_
#define BERTOLOGY_SERVICE_REGISTRY_BATCHER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/head_mask.h"
#include "server/core/model/model.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

struct BatchRow {
  std::shared_ptr<const Encoding> encoding;
  std::shared_ptr<const HeadMask> mask;  // null: no mask
};

// Per-row logits, float32, in the order the rows were given: [C] each for a
// sequence classifier, [n, C] row-major for a token classifier (n = the
// row's tokens).
using BatchDone =
    std::function<void(absl::StatusOr<std::vector<std::vector<float>>>)>;

struct BatcherStats {
  // Called once per forward pass with its row count and, per row, the time
  // it waited in the queue. For metrics; may be empty.
  std::function<void(int rows, const std::vector<absl::Duration>& waits)>
      on_batch;
};

class Batcher {
 public:
  struct Options {
    int max_batch_size = 32;  // 1 disables batching
    absl::Duration max_queue_delay = absl::Microseconds(2000);
    int max_queued_rows = 4096;
    int num_workers = 1;  // concurrent forward passes
    Clock* clock = Clock::Real();
    BatcherStats stats;
  };
  // INVALID_ARGUMENT for bad options (naming the field), FAILED_PRECONDITION
  // if the model has no classifier (an encoder-only head). `model` and
  // `options.clock` must outlive the batcher. Starts the worker threads.
  static absl::StatusOr<std::unique_ptr<Batcher>> Create(const Model* model,
                                                         Options options);
  // Shuts down (draining the queue) if Shutdown() was not called.
  virtual ~Batcher() = default;

  // Queues `rows`; `done` runs exactly once (on a worker thread, or inline
  // with the error when rejected). RESOURCE_EXHAUSTED when the queue is full,
  // INVALID_ARGUMENT naming "rows[i]" for a null, empty or too long encoding,
  // a token id or segment out of the model's range
  // or a mask of the wrong shape, UNAVAILABLE after Shutdown(). No rows: done
  // runs inline with an empty vector. Thread-safe.
  virtual void Enqueue(std::vector<BatchRow> rows, BatchDone done) = 0;
  // Stops accepting work, finishes what is queued (without waiting for the
  // queue delay), joins the workers. Idempotent; thread-safe.
  virtual void Shutdown() = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_BATCHER_H_
