#include "server/core/sweep/sweep.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/engine.h"
#include "server/core/process/threading.h"
#include "server/core/sweep/ordered_parallel.h"

namespace bertology {
namespace {

// Full batches per group of masks run together (see RunChunk).
constexpr int kBatchesPerMaskGroup = 16;

// Bytes per element of the model's compute dtype.
int64_t ElementBytes(const Model& model) {
  return model.dtype() == "F32" ? 4 : 2;
}

struct Tally {
  int draws = 1;
  int64_t rows = 0;    // (example, draw) rows scored
  int64_t scored = 0;  // examples, or labelled tokens (token classifier)
  int correct = 0;
  double loss_sum = 0;
  std::vector<int64_t> draw_correct;  // resample only
  PairedSums paired;

  MaskResult ToResult(int mask_index, int examples) const {
    MaskResult r;
    r.mask_index = mask_index;
    r.examples = examples;
    r.draws = draws;
    r.scored = scored;
    r.correct = correct;
    r.loss_sum = loss_sum;
    r.accuracy = scored > 0 ? static_cast<double>(correct) / scored : 0.0;
    r.draw_correct = draw_correct;
    r.paired = paired;
    return r;
  }
};

// One row's units: how many were scored and right, and their loss.
struct RowScore {
  int units = 0;
  int correct = 0;
  double loss = 0;

  // One scored unit: argmax (first maximum on ties) against `label`, and
  // its cross-entropy, from `n` log-probabilities.
  void Add(const float* log_probs, int n, int label) {
    int best = 0;
    for (int c = 1; c < n; ++c) {
      if (log_probs[c] > log_probs[best]) best = c;
    }
    ++units;
    correct += best == label ? 1 : 0;
    loss -= static_cast<double>(log_probs[label]);
  }
};

// Where a masked batch resumes: ModelInput's start_hidden and
// start_head_outputs (undefined: not given).
struct Resume {
  torch::Tensor hidden, head_outputs;

  // Rows [lo, lo + n) and the first `t` positions of each.
  Resume Slice(int64_t lo, int64_t n, int64_t t) const {
    auto cut = [&](const torch::Tensor& x) {
      return x.defined() ? x.narrow(0, lo, n).narrow(1, 0, t) : x;
    };
    return Resume{cut(hidden), cut(head_outputs)};
  }
};

// `a` and `b` stacked along dim 0, a 3-D tensor's dim 1 zero-padded to the
// longer of the two (positions past a row's length are never read).
torch::Tensor Stack(const torch::Tensor& a, const torch::Tensor& b) {
  if (!a.defined()) return a;
  if (a.dim() < 3) return torch::cat({a, b});
  const int64_t t = std::max(a.size(1), b.size(1));
  auto pad = [t](const torch::Tensor& x) {  // (last dim, then dim 1)
    return torch::constant_pad_nd(x, {0, 0, 0, t - x.size(1)});
  };
  return torch::cat({pad(a), pad(b)});
}

// The outputs of two passes over consecutive rows as one pass's.
TensorOutput Stack(TensorOutput a, const TensorOutput& b) {
  a.logits = Stack(a.logits, b.logits);
  for (auto& [layer, x] : a.hidden) x = Stack(x, b.hidden.at(layer));
  for (auto& [layer, x] : a.head_outputs) {
    x = Stack(x, b.head_outputs.at(layer));
  }
  return a;
}

// One (mask, example) row of a forward pass; `example` indexes the
// caller's examples.
struct Row {
  int mask;  // index into masks; -1 = baseline
  int example;
  int draw = 0;  // kResample: which draw (ModelRow::draw)
};

// The state of one SweepExecutor::Run. Examples are visited in order of
// length (so batches pad little) in chunks whose cached hidden states fit
// the budget; within a chunk, the baseline runs first and caches the input
// hidden state of every layer some mask starts at, then each group of masks
// sharing a start layer runs from that cache.
class SweepRun {
 public:
  SweepRun(const Model& model, const SweepOptions& options,
           const std::vector<SweepExample>& examples,
           const std::vector<SweepMask>& masks, const SweepCallbacks& callbacks)
      : model_(model),
        options_(options),
        examples_(examples),
        masks_(masks),
        callbacks_(callbacks) {}

  absl::Status Run() {
    RETURN_IF_ERROR(Validate());
    Plan();
    // Workers share the cores: each GEMM on the thread that calls it.
    std::optional<SingleThreadedBlasScope> one_blas_thread;
    if (options_.workers > 1) one_blas_thread.emplace();
    const int n = static_cast<int>(examples_.size());
    if (n == 0) {
      DeliverBaseline();  // and the masks that affect no layer
      for (const auto& [start, group] : groups_) {
        for (int m : group) Deliver(m);
      }
      return absl::OkStatus();
    }
    int begin = 0;
    while (begin < n) {
      int end = begin;
      int64_t bytes = 0;
      do {
        bytes += CacheBytes(order_[end]);
        ++end;
      } while (end < n &&
               bytes + CacheBytes(order_[end]) <= options_.cache_budget_bytes);
      RETURN_IF_ERROR(RunChunk(begin, end));
      begin = end;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Validate() {
    RETURN_IF_ERROR(model_.CheckCanClassify());
    if (options_.max_batch_rows < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_batch_rows=", options_.max_batch_rows, " must be >= 1"));
    }
    if (options_.workers < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("workers=", options_.workers, " must be >= 1"));
    }
    RETURN_IF_ERROR(CheckSweepExamples(model_, examples_));
    for (size_t i = 0; i < masks_.size(); ++i) {
      RETURN_IF_ERROR(model_.CheckHeadMask(
          masks_[i].mask, absl::StrCat("masks[", i, "] (", masks_[i].id, ")")));
    }
    return absl::OkStatus();
  }

  // Sorts examples by length and groups masks by first affected layer.
  void Plan() {
    const int n = static_cast<int>(examples_.size());
    const int layers = model_.config().num_hidden_layers;
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [this](int a, int b) { return Length(a) < Length(b); });
    for (int m = 0; m < static_cast<int>(masks_.size()); ++m) {
      const int start = masks_[m].mask.FirstAffectedLayer();
      if (start >= layers) {
        identity_masks_.push_back(m);
      } else {
        groups_[start].push_back(m);
      }
    }
    // A sequence classifier's last layer runs for [CLS] alone
    // (ForwardOptions::cls_only_last_layer) unless its head outputs are
    // captured; capturing them there would make the baseline's logits round
    // differently with and without masks that start at that layer, and so
    // a shard's baseline depend on its masks. Those masks recompute the
    // layer's keys and values instead: 2 d^2 T per row, by a FLOP count
    // about 0.2% of a 12-layer model's single-head sweep (12 of 144 masks,
    // against ~6.5 layers of 12 d^2 T per mask).
    const int cls_only_layer =
        model_.head_kind() == HeadKind::kSequenceClassification ? layers - 1
                                                                : -1;
    for (const auto& [start, group] : groups_) {
      const bool reuse =
          options_.reuse_head_outputs && start != cls_only_layer &&
          std::any_of(group.begin(), group.end(),
                      [this](int m) { return CanReuseHeadOutputs(m); });
      if (reuse) {
        head_slot_[start] = static_cast<int>(head_layers_.size());
        head_layers_.push_back(start);
      }
      if (start > 0 || reuse) {
        cache_slot_[start] = static_cast<int>(capture_layers_.size());
        capture_layers_.push_back(start);
      }
    }
    tallies_.assign(masks_.size(), Tally());
    int64_t rows_per_example = 1;  // the baseline's
    for (size_t m = 0; m < masks_.size(); ++m) {
      Tally& tally = tallies_[m];
      tally.draws = Draws(static_cast<int>(m));
      if (masks_[m].mask.mode() == AblationMode::kResample) {
        tally.draw_correct.assign(tally.draws, 0);
      }
      rows_per_example += tally.draws;
    }
    base_correct_.assign(n, 0);
    base_units_.assign(n, 0);
    element_bytes_ = ElementBytes(model_);
    total_ = static_cast<int64_t>(n) * rows_per_example;
  }

  // Rows per example of mask `m`: its draws in kResample, else 1.
  int Draws(int m) const {
    const HeadMask& mask = masks_[m].mask;
    return mask.mode() == AblationMode::kResample && !mask.IsIdentity()
               ? std::max(1, mask.draws().count)
               : 1;
  }

  int Length(int example) const {
    return static_cast<int>(examples_[example].encoding.tokens.size());
  }

  int64_t CacheBytes(int example) const {
    return static_cast<int64_t>(capture_layers_.size() + head_layers_.size()) *
           Length(example) * model_.config().hidden_size * element_bytes_;
  }

  // Whether mask `m`'s first masked layer can start from the baseline's
  // head outputs there: every mode but uniform, whose ablated heads attend
  // uniformly and so need the layer's values.
  bool CanReuseHeadOutputs(int m) const {
    return masks_[m].mask.mode() != AblationMode::kUniform;
  }

  // One chunk in two phases, each a list of batches run by RunJobs: the
  // baseline (which fills the chunk's cache), then every mask batch. Batches
  // and the order their scores are added in are those of a serial run
  // whatever options_.workers is, so results do not depend on it.
  absl::Status RunChunk(int begin, int end) {
    // cache[i - begin][slot]: [T_i, D] input hidden state of example
    // order_[i] at layer capture_layers_[slot] (a view into its batch);
    // head_cache likewise its head outputs at layer head_layers_[slot].
    std::vector<std::vector<torch::Tensor>> cache(
        end - begin, std::vector<torch::Tensor>(capture_layers_.size()));
    std::vector<std::vector<torch::Tensor>> head_cache(
        end - begin, std::vector<torch::Tensor>(head_layers_.size()));
    const int max_rows = BatchRows(Length(order_[end - 1]));
    std::vector<std::vector<Row>> base_batches;
    for (int b = begin; b < end; b += max_rows) {
      std::vector<Row>& rows = base_batches.emplace_back();
      for (int i = b; i < std::min(end, b + max_rows); ++i) {
        rows.push_back({-1, order_[i]});
      }
    }
    std::vector<TensorOutput> base_out(base_batches.size());
    OrderedParallelFns base;
    base.compute = [&](int j) -> absl::Status {
      EngineOptions fo;
      fo.pack_tokens = options_.pack_tokens;
      fo.capture_hidden = capture_layers_;
      fo.capture_head_outputs = head_layers_;
      ASSIGN_OR_RETURN(base_out[j], Forward(base_batches[j], fo));
      return absl::OkStatus();
    };
    base.commit = [&](int j) -> absl::Status {
      const std::vector<Row>& rows = base_batches[j];
      const int first = j * max_rows;  // chunk position of rows[0]
      // Each row's real tokens of each captured layer, into its cache slot.
      auto keep = [&](const std::map<int, torch::Tensor>& captured,
                      const std::vector<int>& layers,
                      std::vector<std::vector<torch::Tensor>>* into) {
        for (size_t slot = 0; slot < layers.size(); ++slot) {
          const torch::Tensor& x = captured.at(layers[slot]);
          for (size_t r = 0; r < rows.size(); ++r) {
            (*into)[first + r][slot] =
                x[r].narrow(0, 0, Length(rows[r].example));
          }
        }
      };
      keep(base_out[j].hidden, capture_layers_, &cache);
      keep(base_out[j].head_outputs, head_layers_, &head_cache);
      RETURN_IF_ERROR(Score(base_out[j].logits, rows));
      base_out[j] = TensorOutput();  // the cache keeps what it needs
      Progress(static_cast<int64_t>(rows.size()) *
               (1 + static_cast<int64_t>(identity_masks_.size())));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(RunJobs(static_cast<int>(base_batches.size()), base));

    std::vector<int> cache_index(examples_.size(), -1);
    for (int i = begin; i < end; ++i) cache_index[order_[i]] = i - begin;
    // Masks of a start layer run a few at a time, so that results stream
    // out steadily instead of all at the end of the chunk: a caller whose
    // call is cut part-way keeps them and resends only the rest. About
    // kBatchesPerMaskGroup full batches per group keeps the one partial
    // batch at a group's end a small cost. Within a group, rows are ordered
    // by (example length, example, mask): consecutive rows share a length,
    // and usually an example.
    struct MaskBatch {
      int start;
      std::vector<Row> rows;
    };
    std::vector<MaskBatch> batches;
    const int per_group =
        std::max(1, kBatchesPerMaskGroup * max_rows / std::max(1, end - begin));
    for (const auto& [start, group] : groups_) {
      for (size_t g = 0; g < group.size(); g += per_group) {
        const size_t g_end = std::min(group.size(), g + per_group);
        std::vector<Row> pending;
        pending.reserve(static_cast<size_t>(end - begin) * (g_end - g));
        for (int i = begin; i < end; ++i) {
          for (size_t k = g; k < g_end; ++k) {
            for (int d = 0; d < Draws(group[k]); ++d) {
              pending.push_back({group[k], order_[i], d});
            }
          }
        }
        for (size_t b = 0; b < pending.size(); b += max_rows) {
          batches.push_back(
              {start,
               std::vector<Row>(
                   pending.begin() + b,
                   pending.begin() + std::min(pending.size(), b + max_rows))});
        }
      }
    }
    std::vector<torch::Tensor> logits(batches.size());
    OrderedParallelFns masked;
    masked.compute = [&](int j) -> absl::Status {
      const MaskBatch& batch = batches[j];
      EngineOptions fo;
      fo.pack_tokens = options_.pack_tokens;
      fo.start_layer = batch.start;
      // Cached [T_i, D] per row of the batch, padded into [B, T, D].
      auto stack = [&](const std::vector<std::vector<torch::Tensor>>& from,
                       int slot) {
        std::vector<const torch::Tensor*> parts;
        parts.reserve(batch.rows.size());
        for (const Row& row : batch.rows) {
          parts.push_back(&from[cache_index[row.example]][slot]);
        }
        return PadStack(parts);
      };
      Resume start;
      const auto head_slot = head_slot_.find(batch.start);
      const bool reuse = head_slot != head_slot_.end() &&
                         std::all_of(batch.rows.begin(), batch.rows.end(),
                                     [this](const Row& r) {
                                       return CanReuseHeadOutputs(r.mask);
                                     });
      if (batch.start > 0 || reuse) {
        start.hidden = stack(cache, cache_slot_.at(batch.start));
      }
      if (reuse) start.head_outputs = stack(head_cache, head_slot->second);
      ASSIGN_OR_RETURN(TensorOutput out, Forward(batch.rows, fo, start));
      logits[j] = std::move(out.logits);
      return absl::OkStatus();
    };
    masked.commit = [&](int j) -> absl::Status {
      RETURN_IF_ERROR(Score(logits[j], batches[j].rows));
      logits[j] = torch::Tensor();
      Progress(static_cast<int64_t>(batches[j].rows.size()));
      return absl::OkStatus();
    };
    return RunJobs(static_cast<int>(batches.size()), masked);
  }

  // RunOrderedParallel on options_.workers threads, each with one intra-op
  // thread. libtorch throws; a worker thread must not, so each job's
  // exceptions become its status here.
  absl::Status RunJobs(int jobs, const OrderedParallelFns& fns) {
    auto guard = [](const std::function<absl::Status(int)>& fn) {
      return [&fn](int j) -> absl::Status {
        try {
          return fn(j);
        } catch (const c10::Error& e) {
          return absl::InternalError(absl::StrCat("sweep failed in libtorch: ",
                                                  e.what_without_backtrace()));
        } catch (const std::exception& e) {
          return absl::InternalError(absl::StrCat("sweep failed: ", e.what()));
        }
      };
    };
    OrderedParallelFns guarded;
    guarded.compute = guard(fns.compute);
    guarded.commit = guard(fns.commit);
    guarded.on_worker_start = UseOneIntraOpThreadOnThisThread;
    return RunOrderedParallel(jobs, options_.workers, guarded);
  }

  // [B, T, D] from B tensors [T_i, D], zero-padded to the longest (padding
  // positions are never attended to, so their values do not matter).
  static torch::Tensor PadStack(
      const std::vector<const torch::Tensor*>& parts) {
    int64_t t = 0;
    for (const torch::Tensor* p : parts) t = std::max(t, p->size(0));
    const torch::Tensor& first = *parts.front();
    torch::Tensor out =
        torch::zeros({static_cast<int64_t>(parts.size()), t, first.size(1)},
                     first.options());
    for (size_t r = 0; r < parts.size(); ++r) {
      out[r].narrow(0, 0, parts[r]->size(0)).copy_(*parts[r]);
    }
    return out;
  }

  // Rows per forward pass for examples of up to `tokens` tokens:
  // max_batch_rows, fewer where device_memory_bytes says so.
  int BatchRows(int tokens) const {
    const int cap = options_.max_batch_rows;
    if (options_.device_memory_bytes <= 0) return cap;
    const int64_t fit =
        options_.device_memory_bytes / EstimateRowBytes(model_, tokens);
    return static_cast<int>(std::clamp<int64_t>(fit, 1, cap));
  }

  // One pass over `rows`, each under its mask (none for the baseline's),
  // from `start_hidden` when options.start_layer > 0. A pass that runs out
  // of device memory (RESOURCE_EXHAUSTED) runs again as two halves, each
  // split further if need be, down to single rows: the same rows, the same
  // results to float rounding (a row's numbers do not depend on the rows
  // beside it beyond that).
  absl::StatusOr<TensorOutput> Forward(const std::vector<Row>& rows,
                                       const EngineOptions& options,
                                       const Resume& start = Resume()) {
    if (callbacks_.is_cancelled && callbacks_.is_cancelled()) {
      return absl::CancelledError("sweep cancelled");
    }
    absl::StatusOr<TensorOutput> out = ForwardOnce(rows, options, start);
    if (out.ok() || !absl::IsResourceExhausted(out.status()) ||
        rows.size() < 2) {
      return out;
    }
    if (callbacks_.on_batch_split) callbacks_.on_batch_split();
    const size_t half = rows.size() / 2;
    auto part = [&](size_t lo, size_t n) {
      const std::vector<Row> sub(rows.begin() + lo, rows.begin() + lo + n);
      int t = 0;
      for (const Row& row : sub) t = std::max(t, Length(row.example));
      return Forward(sub, options, start.Slice(lo, n, t));
    };
    ASSIGN_OR_RETURN(TensorOutput a, part(0, half));
    ASSIGN_OR_RETURN(TensorOutput b, part(half, rows.size() - half));
    return Stack(std::move(a), b);
  }

  absl::StatusOr<TensorOutput> ForwardOnce(const std::vector<Row>& rows,
                                           const EngineOptions& options,
                                           const Resume& start) {
    if (options_.inject_before_forward) {
      RETURN_IF_ERROR(
          options_.inject_before_forward(static_cast<int>(rows.size())));
    }
    std::vector<const Encoding*> encodings;
    std::vector<const HeadMask*> masks;
    encodings.reserve(rows.size());
    masks.reserve(rows.size());
    for (const Row& row : rows) {
      encodings.push_back(&examples_[row.example].encoding);
      masks.push_back(row.mask < 0 ? nullptr : &masks_[row.mask].mask);
    }
    ASSIGN_OR_RETURN(ModelInput input, model_.engine().MakeBatch(encodings));
    for (const Row& row : rows) input.draws.push_back(row.draw);
    input.start_hidden = start.hidden;
    input.start_head_outputs = start.head_outputs;
    return model_.engine().Run(input, masks, options);
  }

  // Adds each row's correctness (argmax, first maximum on ties) and
  // cross-entropy to its mask's tally, and its per-example difference from
  // the baseline to the paired sums (once every draw of the example is in),
  // delivering masks that are complete. logits: [B, C], or [B, T, C] for a
  // token classifier (every labelled position of a row is a unit). A
  // chunk's baseline rows are scored before its mask rows.
  absl::Status Score(const torch::Tensor& logits,
                     const std::vector<Row>& rows) {
    const torch::Tensor log_probs =
        torch::log_softmax(logits.to(torch::kFloat32), -1).contiguous();
    const bool per_token = log_probs.dim() == 3;
    const int num_classes = static_cast<int>(log_probs.size(-1));
    const int64_t row_stride =
        per_token ? log_probs.size(1) * num_classes : num_classes;
    const float* lp = log_probs.data_ptr<float>();
    const int64_t n = static_cast<int64_t>(examples_.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const Row& row = rows[r];
      const SweepExample& example = examples_[row.example];
      const float* values = lp + static_cast<int64_t>(r) * row_stride;
      RowScore score;
      if (per_token) {
        for (size_t t = 0; t < example.token_labels.size(); ++t) {
          if (example.token_labels[t] == kUnscoredToken) continue;
          score.Add(values + t * num_classes, num_classes,
                    example.token_labels[t]);
        }
      } else {
        score.Add(values, num_classes, example.label);
      }
      Tally& tally = row.mask < 0 ? baseline_ : tallies_[row.mask];
      ++tally.rows;
      tally.scored += score.units;
      tally.correct += score.correct;
      tally.loss_sum += score.loss;
      if (row.mask < 0) {
        base_correct_[row.example] = score.correct;
        base_units_[row.example] = score.units;
        tally.paired.Add(score.units, 0.0);
      } else if (tally.draws == 1) {
        tally.paired.Add(score.units,
                         score.correct - base_correct_[row.example]);
      } else {
        tally.draw_correct[row.draw] += score.correct;
        // Every draw of an example, then its mean against the baseline.
        auto& [right, seen] = pending_[{row.mask, row.example}];
        right += score.correct;
        if (++seen == tally.draws) {
          tally.paired.Add(score.units,
                           static_cast<double>(right) / tally.draws -
                               base_correct_[row.example]);
          pending_.erase({row.mask, row.example});
        }
      }
      if (tally.rows == n * tally.draws) {
        if (row.mask < 0) {
          DeliverBaseline();
        } else {
          Deliver(row.mask);
        }
      }
    }
    return absl::OkStatus();
  }

  // The baseline, then every mask that affects no layer (same scores).
  void DeliverBaseline() {
    const int n = static_cast<int>(examples_.size());
    if (callbacks_.on_baseline) {
      callbacks_.on_baseline(baseline_.ToResult(-1, n));
    }
    for (int m : identity_masks_) {
      tallies_[m] = baseline_;
      Deliver(m);
    }
  }

  void Deliver(int mask) {
    if (callbacks_.on_result) {
      callbacks_.on_result(
          tallies_[mask].ToResult(mask, static_cast<int>(examples_.size())));
    }
  }

  void Progress(int64_t rows) {
    done_ += rows;
    if (callbacks_.on_progress) callbacks_.on_progress(done_, total_);
  }

  const Model& model_;
  const SweepOptions& options_;
  const std::vector<SweepExample>& examples_;
  const std::vector<SweepMask>& masks_;
  const SweepCallbacks& callbacks_;

  std::vector<int> order_;  // example indices by length
  std::vector<int> identity_masks_;
  std::map<int, std::vector<int>> groups_;  // start layer -> masks
  // Start layers whose input hidden state the baseline caches: those > 0,
  // and 0 where head outputs are reused. Ascending.
  std::vector<int> capture_layers_;
  std::map<int, int> cache_slot_;  // start layer -> capture index
  // Start layers whose head outputs the baseline caches (some mask there
  // can start from them; SweepOptions::reuse_head_outputs). Ascending.
  std::vector<int> head_layers_;
  std::map<int, int> head_slot_;  // start layer -> head_layers_ index
  int64_t element_bytes_ = 4;
  Tally baseline_;
  std::vector<Tally> tallies_;
  // Per example: the baseline's correct and scored units.
  std::vector<int> base_correct_, base_units_;
  // (mask, example) of kResample masks with draws still to score: correct
  // units so far, draws scored.
  std::map<std::pair<int, int>, std::pair<int, int>> pending_;
  int64_t done_ = 0;
  int64_t total_ = 0;
};

}  // namespace

absl::Status CheckSweepExamples(const Model& model,
                                const std::vector<SweepExample>& examples) {
  const int num_labels = static_cast<int>(model.config().id2label.size());
  const bool per_token = model.head_kind() == HeadKind::kTokenClassification;
  auto check_label = [&](size_t i, int label, const std::string& field) {
    if (label < 0 || label >= num_labels) {
      return absl::InvalidArgumentError(
          absl::StrCat("examples[", i, "].", field, "=", label,
                       " out of range [0, ", num_labels, ")"));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < examples.size(); ++i) {
    const SweepExample& e = examples[i];
    if (e.encoding.tokens.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("examples[", i, "].encoding has no tokens"));
    }
    if (!per_token) {
      RETURN_IF_ERROR(check_label(i, e.label, "label"));
      continue;
    }
    if (e.token_labels.size() != e.encoding.tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "examples[", i, "].token_labels has ", e.token_labels.size(),
          " entries for ", e.encoding.tokens.size(), " tokens"));
    }
    for (size_t t = 0; t < e.token_labels.size(); ++t) {
      if (e.token_labels[t] == kUnscoredToken) continue;
      RETURN_IF_ERROR(check_label(i, e.token_labels[t],
                                  absl::StrCat("token_labels[", t, "]")));
    }
  }
  return absl::OkStatus();
}

int64_t EstimateRowBytes(const Model& model, int tokens) {
  const BertConfig& c = model.config();
  const int64_t t = std::max(1, tokens);
  const int64_t element = ElementBytes(model);
  // Per token: the layer's input, queries, keys, values, head outputs, the
  // attention block's output and residual, and the feed-forward's input,
  // intermediate and output; per head, the T x T scores and probabilities
  // (the explicit path; the fused one needs less).
  const int64_t per_token = 8 * int64_t{c.hidden_size} + c.intermediate_size;
  const int64_t scores = 2 * int64_t{c.num_attention_heads} * t * t;
  // Twice over: the allocator's rounding and a pass's transient copies.
  return 2 * element * (t * per_token + scores);
}

int AutoSweepWorkers(const Model& model) {
  if (model.device() != "cpu") return 1;
  return UsableCpus();
}

absl::Status SweepExecutor::Run(const std::vector<SweepExample>& examples,
                                const std::vector<SweepMask>& masks,
                                const SweepCallbacks& callbacks) const {
  if (model_ == nullptr) return absl::InvalidArgumentError("model is null");
  try {
    return SweepRun(*model_, options_, examples, masks, callbacks).Run();
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("sweep failed in libtorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("sweep failed: ", e.what()));
  }
}

}  // namespace bertology
