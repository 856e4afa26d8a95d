#include "server/service/registry/batcher.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"

namespace bertology {
namespace {

using Logits = std::vector<std::vector<float>>;

class DynamicBatcher : public Batcher {
 public:
  DynamicBatcher(const Model* model, Options options)
      : model_(model), options_(std::move(options)) {}
  ~DynamicBatcher() override { Shutdown(); }

  void Start() {
    absl::MutexLock lock(&join_mu_);
    for (int i = 0; i < options_.num_workers; ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
  }

  void Enqueue(std::vector<BatchRow> rows, BatchDone done) override;
  void Shutdown() override;

 private:
  // One Enqueue call. Its fields are guarded by mu_ (not annotated: the
  // analysis cannot name another object's mutex).
  struct Request {
    BatchDone done;
    Logits logits;  // filled per row
    int remaining = 0;
    bool finished = false;  // done has been taken to run
  };
  struct QueuedRow {
    std::shared_ptr<Request> request;
    int index;  // row within the request
    BatchRow row;
    int length;
    absl::Time enqueued;
  };

  absl::Status Validate(const std::vector<BatchRow>& rows) const;
  void WorkerLoop();
  bool HasWorkOrShutdown() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || shutdown_;
  }
  bool FullOrShutdown() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(queue_.size()) >= options_.max_batch_size ||
           shutdown_;
  }
  std::vector<QueuedRow> TakeBatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Logits> RunBatch(const std::vector<QueuedRow>& batch) const;
  void Complete(const std::vector<QueuedRow>& batch,
                absl::StatusOr<Logits> logits) ABSL_LOCKS_EXCLUDED(mu_);

  const Model* const model_;
  const Options options_;

  absl::Mutex mu_;
  std::vector<QueuedRow> queue_ ABSL_GUARDED_BY(mu_);  // in arrival order
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex join_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(join_mu_);
};

absl::Status DynamicBatcher::Validate(const std::vector<BatchRow>& rows) const {
  const BertConfig& config = model_->config();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].encoding == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows[", i, "].encoding is null"));
    }
    const size_t n = rows[i].encoding->tokens.size();
    if (n == 0 || n > static_cast<size_t>(model_->max_seq_len())) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows[", i, "].encoding has ", n,
                       " tokens; must be in [1, ", model_->max_seq_len(), "]"));
    }
    // Checked here so one bad request cannot fail a batch shared with
    // others (Forward() would refuse the whole batch).
    const std::vector<Token>& tokens = rows[i].encoding->tokens;
    for (size_t j = 0; j < tokens.size(); ++j) {
      // Segments are pair roles, 0 or 1, whatever token types the model
      // has (Engine::MakeBatch maps them).
      if (tokens[j].id < 0 || tokens[j].id >= config.vocab_size ||
          tokens[j].segment < 0 || tokens[j].segment > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rows[", i, "].encoding.tokens[", j, "] has id ", tokens[j].id,
            " segment ", tokens[j].segment, "; the model has ",
            config.vocab_size, " ids and segments are 0 or 1"));
      }
    }
    if (rows[i].mask != nullptr) {
      RETURN_IF_ERROR(model_->CheckHeadMask(
          *rows[i].mask, absl::StrCat("rows[", i, "].mask")));
    }
  }
  return absl::OkStatus();
}

void DynamicBatcher::Enqueue(std::vector<BatchRow> rows, BatchDone done) {
  if (rows.empty()) {
    done(Logits());
    return;
  }
  absl::Status status = Validate(rows);
  if (status.ok()) {
    absl::MutexLock lock(&mu_);
    if (shutdown_) {
      status = absl::UnavailableError("batcher is shut down");
    } else if (queue_.size() + rows.size() >
               static_cast<size_t>(options_.max_queued_rows)) {
      status = absl::ResourceExhaustedError(absl::StrCat(
          "queue full (max_queued_rows=", options_.max_queued_rows, ")"));
    } else {
      auto request = std::make_shared<Request>();
      request->done = std::move(done);
      request->logits.resize(rows.size());
      request->remaining = static_cast<int>(rows.size());
      const absl::Time now = options_.clock->Now();
      for (size_t i = 0; i < rows.size(); ++i) {
        const int length = static_cast<int>(rows[i].encoding->tokens.size());
        queue_.push_back(
            {request, static_cast<int>(i), std::move(rows[i]), length, now});
      }
      return;
    }
  }
  done(status);
}

void DynamicBatcher::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void DynamicBatcher::WorkerLoop() {
  mu_.Lock();
  for (;;) {
    mu_.Await(absl::Condition(this, &DynamicBatcher::HasWorkOrShutdown));
    if (queue_.empty()) break;  // shut down and drained
    const absl::Time deadline =
        queue_.front().enqueued + options_.max_queue_delay;
    if (!FullOrShutdown() && options_.clock->Now() < deadline) {
      // Another worker may take these rows meanwhile: re-check from the top.
      options_.clock->AwaitWithDeadline(
          &mu_, absl::Condition(this, &DynamicBatcher::FullOrShutdown),
          deadline);
      continue;
    }
    std::vector<QueuedRow> batch = TakeBatchLocked();
    const absl::Time now = options_.clock->Now();
    mu_.Unlock();

    if (options_.stats.on_batch) {
      std::vector<absl::Duration> waits;
      waits.reserve(batch.size());
      for (const QueuedRow& row : batch) waits.push_back(now - row.enqueued);
      options_.stats.on_batch(static_cast<int>(batch.size()), waits);
    }
    Complete(batch, RunBatch(batch));
    mu_.Lock();
  }
  mu_.Unlock();
}

std::vector<DynamicBatcher::QueuedRow> DynamicBatcher::TakeBatchLocked() {
  const size_t max = static_cast<size_t>(options_.max_batch_size);
  std::vector<QueuedRow> batch;
  if (queue_.size() <= max) {
    batch.swap(queue_);
    return batch;
  }
  // The oldest row, then the rows nearest to it in length (older first).
  std::vector<int> distance(queue_.size());
  for (size_t i = 0; i < queue_.size(); ++i) {
    distance[i] = std::abs(queue_[i].length - queue_.front().length);
  }
  std::vector<size_t> order(queue_.size() - 1);
  std::iota(order.begin(), order.end(), 1);
  std::partial_sort(
      order.begin(), order.begin() + (max - 1), order.end(),
      [&distance](size_t a, size_t b) {
        return distance[a] != distance[b] ? distance[a] < distance[b] : a < b;
      });
  std::vector<bool> taken(queue_.size(), false);
  taken[0] = true;
  for (size_t i = 0; i + 1 < max; ++i) taken[order[i]] = true;
  std::vector<QueuedRow> rest;
  rest.reserve(queue_.size() - max);
  batch.reserve(max);
  for (size_t i = 0; i < queue_.size(); ++i) {
    (taken[i] ? batch : rest).push_back(std::move(queue_[i]));
  }
  queue_.swap(rest);
  return batch;
}

absl::StatusOr<Logits> DynamicBatcher::RunBatch(
    const std::vector<QueuedRow>& batch) const {
  std::vector<ModelRow> rows;
  rows.reserve(batch.size());
  for (const QueuedRow& row : batch) {
    rows.push_back(ModelRow{row.row.encoding.get(), row.row.mask.get()});
  }
  ASSIGN_OR_RETURN(ForwardOutput out, model_->Forward(rows, ForwardOptions()));
  // [B, C] for a sequence classifier; [B, T, C] for a token classifier,
  // of which each row keeps its own tokens' [n, C].
  const FloatArray& logits = out.logits;
  const bool per_token = logits.shape.size() == 3;
  if ((logits.shape.size() != 2 && !per_token) ||
      logits.shape[0] != static_cast<int64_t>(batch.size())) {
    return absl::InternalError("model returned logits of the wrong shape");
  }
  const int64_t row_size =
      per_token ? logits.shape[1] * logits.shape[2] : logits.shape[1];
  const float* data = logits.data.data();
  Logits per_row(batch.size());
  for (size_t r = 0; r < batch.size(); ++r) {
    const int64_t kept =
        per_token ? static_cast<int64_t>(batch[r].row.encoding->tokens.size()) *
                        logits.shape[2]
                  : row_size;
    per_row[r].assign(data + r * row_size, data + r * row_size + kept);
  }
  return per_row;
}

void DynamicBatcher::Complete(const std::vector<QueuedRow>& batch,
                              absl::StatusOr<Logits> logits) {
  std::vector<std::pair<BatchDone, absl::StatusOr<Logits>>> finished;
  {
    absl::MutexLock lock(&mu_);
    if (!logits.ok()) {
      absl::flat_hash_set<const Request*> failed;
      for (const QueuedRow& row : batch) {
        Request& request = *row.request;
        if (request.finished) continue;
        request.finished = true;
        failed.insert(&request);
        finished.emplace_back(std::move(request.done), logits.status());
      }
      // Their rows still queued would only be wasted work.
      queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                  [&failed](const QueuedRow& row) {
                                    return failed.contains(row.request.get());
                                  }),
                   queue_.end());
    } else {
      for (size_t r = 0; r < batch.size(); ++r) {
        Request& request = *batch[r].request;
        if (request.finished) continue;  // failed in another batch
        request.logits[batch[r].index] = std::move((*logits)[r]);
        if (--request.remaining == 0) {
          request.finished = true;
          finished.emplace_back(std::move(request.done),
                                std::move(request.logits));
        }
      }
    }
  }
  for (auto& [done, result] : finished) done(std::move(result));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Batcher>> Batcher::Create(const Model* model,
                                                         Options options) {
  if (model == nullptr) return absl::InvalidArgumentError("model is null");
  if (!model->has_classifier()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "batching Classify rows needs a sequence or token classifier; the "
        "model is a ",
        model->architecture()));
  }
  if (options.max_batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_batch_size=", options.max_batch_size, " must be >= 1"));
  }
  if (options.max_queue_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_queue_delay=", absl::FormatDuration(options.max_queue_delay),
        " must be >= 0"));
  }
  if (options.max_queued_rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_queued_rows=", options.max_queued_rows, " must be >= 1"));
  }
  if (options.num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_workers=", options.num_workers, " must be >= 1"));
  }
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("clock is null");
  }
  auto batcher = std::make_unique<DynamicBatcher>(model, std::move(options));
  batcher->Start();
  return batcher;
}

}  // namespace bertology
