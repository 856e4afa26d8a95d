#include "server/core/importance/importance.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/engine.h"

namespace bertology {
namespace {

// Per-layer L2 normalisation with HF's exponent 2 and +1e-20.
void NormalizeByLayer(std::vector<double>& v, int layers, int heads) {
  for (int l = 0; l < layers; ++l) {
    double sq = 0;
    for (int h = 0; h < heads; ++h) sq += v[l * heads + h] * v[l * heads + h];
    const double norm = std::sqrt(sq) + 1e-20;
    for (int h = 0; h < heads; ++h) v[l * heads + h] /= norm;
  }
}

// The scores of one batch, as the sweep counts them (argmax over float32
// log-probabilities, first maximum on ties), so accuracies equal a sweep's
// and Classify's under the same mask.
void Tally(const torch::Tensor& log_probs,
           const std::vector<const SweepExample*>& rows, ImportanceResult* r) {
  const torch::Tensor lp = log_probs.contiguous();
  const bool per_token = lp.dim() == 3;
  const int n = static_cast<int>(lp.size(-1));
  const int64_t stride = per_token ? lp.size(1) * n : n;
  const float* data = lp.data_ptr<float>();
  auto add = [&](const float* p, int label) {
    int best = 0;
    for (int c = 1; c < n; ++c) {
      if (p[c] > p[best]) best = c;
    }
    ++r->scored;
    r->correct += best == label ? 1 : 0;
    r->loss_sum -= static_cast<double>(p[label]);
  };
  for (size_t b = 0; b < rows.size(); ++b) {
    const float* row = data + static_cast<int64_t>(b) * stride;
    if (per_token) {
      const std::vector<int>& labels = rows[b]->token_labels;
      for (size_t t = 0; t < labels.size(); ++t) {
        if (labels[t] != kUnscoredToken) add(row + t * n, labels[t]);
      }
    } else {
      add(row, rows[b]->label);
    }
    ++r->examples;
  }
}

// Gold labels of a batch for the loss: [B] for a sequence classifier, [B, T]
// with kUnscoredToken (-1) where nothing is scored (padding included).
torch::Tensor Labels(const std::vector<const SweepExample*>& rows,
                     bool per_token, int64_t t) {
  const int64_t b = static_cast<int64_t>(rows.size());
  if (!per_token) {
    std::vector<int64_t> v(b);
    for (int64_t i = 0; i < b; ++i) v[i] = rows[i]->label;
    return torch::tensor(v, torch::kLong);
  }
  torch::Tensor out = torch::full({b, t}, kUnscoredToken, torch::kLong);
  auto a = out.accessor<int64_t, 2>();
  for (int64_t i = 0; i < b; ++i) {
    const std::vector<int>& labels = rows[i]->token_labels;
    for (size_t j = 0; j < labels.size(); ++j) a[i][j] = labels[j];
  }
  return out;
}

absl::StatusOr<ImportanceResult> Importance(
    const Model& model, const std::vector<SweepExample>& examples,
    const HeadMask& mask, const ImportanceOptions& options,
    const ImportanceCallbacks& callbacks, int64_t offset, int64_t total) {
  RETURN_IF_ERROR(model.CheckCanClassify());
  if (examples.empty()) return absl::InvalidArgumentError("examples is empty");
  if (options.max_batch_rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_batch_rows=", options.max_batch_rows, " must be >= 1"));
  }
  RETURN_IF_ERROR(CheckSweepExamples(model, examples));
  RETURN_IF_ERROR(model.CheckHeadMask(mask, "head_mask"));
  const int layers = model.config().num_hidden_layers;
  const int heads = model.config().num_attention_heads;
  const bool per_token = model.head_kind() == HeadKind::kTokenClassification;
  if (total <= 0) total = static_cast<int64_t>(examples.size());

  // By length, so batches pad little; the sum does not depend on order
  // beyond rounding.
  std::vector<int> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return examples[a].encoding.tokens.size() <
           examples[b].encoding.tokens.size();
  });
  const torch::Tensor base =
      torch::tensor(mask.values(), torch::kFloat).view({layers, heads});

  ImportanceResult result;
  result.layers = layers;
  result.heads = heads;
  torch::Tensor raw = torch::zeros({layers, heads}, torch::kDouble);
  EngineOptions forward;  // logits only; cls_only_last_layer as inference
  for (size_t start = 0; start < order.size();
       start += options.max_batch_rows) {
    if (callbacks.is_cancelled && callbacks.is_cancelled()) {
      return absl::CancelledError(
          absl::StrCat("head importance cancelled after ", start, " examples"));
    }
    const size_t end = std::min(
        order.size(), start + static_cast<size_t>(options.max_batch_rows));
    std::vector<const Encoding*> encodings;
    std::vector<const SweepExample*> rows;
    for (size_t i = start; i < end; ++i) {
      rows.push_back(&examples[order[i]]);
      encodings.push_back(&examples[order[i]].encoding);
    }
    ASSIGN_OR_RETURN(ModelInput input, model.engine().MakeBatch(encodings));
    const int64_t b = static_cast<int64_t>(rows.size());
    // One copy of the mask per row: the gradient of the summed loss with
    // respect to row r's copy is example r's own gradient, so |.| is taken
    // per example (HF at batch size 1) in one backward pass.
    HeadMaskTensor m;
    m.mode = mask.mode();
    m.reference = mask.reference();  // kMean: the means ablation moves to
    m.values = base.unsqueeze(0)
                   .repeat({b, 1, 1})
                   .to(input.input_ids.device())
                   .requires_grad_(true);
    ASSIGN_OR_RETURN(TensorOutput out,
                     model.engine().RunWithGrad(input, m, forward));
    try {
      torch::AutoGradMode grad_mode(true);
      Tally(torch::log_softmax(out.logits.detach(), -1), rows, &result);
      const torch::Tensor log_probs =
          torch::log_softmax(out.logits.to(torch::kDouble), -1);
      const torch::Tensor labels =
          Labels(rows, per_token, input.input_ids.size(1));
      torch::Tensor loss;
      if (per_token) {
        const torch::Tensor scored = labels.ne(kUnscoredToken);
        const torch::Tensor picked =
            log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1);
        loss = -(picked * scored.to(torch::kDouble)).sum();
      } else {
        loss = -log_probs.gather(-1, labels.unsqueeze(-1)).sum();
      }
      // autograd::grad, not backward(): only the mask's gradient, nothing
      // accumulated into the shared parameters' .grad.
      const torch::Tensor grad = torch::autograd::grad(
          {loss}, {m.values}, /*grad_outputs=*/{}, /*retain_graph=*/false,
          /*create_graph=*/false, /*allow_unused=*/true)[0];
      if (grad.defined()) {
        raw += grad.abs().sum(0).to(torch::kCPU, torch::kDouble);
      }
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("head importance backward pass failed: ",
                       e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("head importance backward pass failed: ", e.what()));
    }
    if (callbacks.on_progress) {
      callbacks.on_progress(offset + static_cast<int64_t>(end), total);
    }
  }
  const double* r = raw.data_ptr<double>();
  result.raw.assign(r, r + layers * heads);
  result.importance = NormalizeImportance(result.raw, layers, heads, options);
  result.accuracy = result.scored > 0
                        ? static_cast<double>(result.correct) / result.scored
                        : 0.0;
  return result;
}

}  // namespace

std::vector<double> NormalizeImportance(const std::vector<double>& raw,
                                        int layers, int heads,
                                        const ImportanceOptions& options) {
  std::vector<double> v = raw;
  if (options.layer_norm) NormalizeByLayer(v, layers, heads);
  if (options.global_norm && !v.empty()) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double min = *lo, range = *hi - *lo;
    for (double& x : v) x = range > 0 ? (x - min) / range : 0.0;
  }
  return v;
}

absl::StatusOr<ImportanceResult> ComputeHeadImportance(
    const Model& model, const std::vector<SweepExample>& examples,
    const HeadMask& mask, const ImportanceOptions& options,
    const ImportanceCallbacks& callbacks, int64_t progress_offset,
    int64_t progress_total) {
  try {
    return Importance(model, examples, mask, options, callbacks,
                      progress_offset, progress_total);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("head importance failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("head importance failed: ", e.what()));
  }
}

absl::StatusOr<int> RunPruneCurve(const Model& model,
                                  const std::vector<SweepExample>& examples,
                                  const PruneOptions& options,
                                  const PruneCallbacks& callbacks) {
  // !(x > 0) also refuses NaN.
  if (!(options.threshold > 0) || options.threshold > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold=", options.threshold, " is not in (0, 1]"));
  }
  if (!(options.step_fraction > 0) || options.step_fraction > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step_fraction=", options.step_fraction, " is not in (0, 1]"));
  }
  const int layers = model.config().num_hidden_layers;
  const int heads = model.config().num_attention_heads;
  const int all = layers * heads;
  const int per_step =
      std::max(1, static_cast<int>(std::floor(options.step_fraction * all)));
  const int64_t n = static_cast<int64_t>(examples.size());
  // Upper bound: every step until no head is left.
  const int64_t total = n * (1 + (all + per_step - 1) / per_step);
  ImportanceCallbacks inner;
  inner.on_progress = callbacks.on_progress;
  inner.is_cancelled = callbacks.is_cancelled;

  std::vector<float> values(all, 1.0f);
  PruneStep step;
  step.heads_left = all;
  ASSIGN_OR_RETURN(HeadMask mask,
                   HeadMask::Dense(layers, heads, values, options.mode));
  mask.set_reference(options.reference);
  ASSIGN_OR_RETURN(step.scores,
                   ComputeHeadImportance(model, examples, mask,
                                         options.importance, inner, 0, total));
  if (callbacks.on_step) callbacks.on_step(step);
  const double bar = options.threshold * step.scores.accuracy;
  int kept = 0;
  while (step.heads_left > 0) {
    // Masked heads get +inf importance (HF); ascending, ties to the lower
    // flat index.
    std::vector<double> rank = step.scores.importance;
    for (int i = 0; i < all; ++i) {
      if (values[i] == 0.0f) rank[i] = std::numeric_limits<double>::infinity();
    }
    std::vector<int> order(all);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return rank[a] < rank[b]; });
    const int take = std::min(per_step, step.heads_left);
    PruneStep next;
    next.step = step.step + 1;
    next.masked = step.masked;
    for (int k = 0; k < take; ++k) {
      const int i = order[k];
      values[i] = 0.0f;
      next.masked_this_step.push_back({i / heads, i % heads});
    }
    for (const LayerHead& lh : next.masked_this_step) {
      next.masked.push_back(lh);
    }
    std::sort(next.masked.begin(), next.masked.end(),
              [](const LayerHead& a, const LayerHead& b) {
                return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
              });
    next.heads_left = step.heads_left - take;
    if (callbacks.is_cancelled && callbacks.is_cancelled()) {
      return absl::CancelledError(
          absl::StrCat("prune curve cancelled before step ", next.step));
    }
    ASSIGN_OR_RETURN(mask,
                     HeadMask::Dense(layers, heads, values, options.mode));
    mask.set_reference(options.reference);
    ASSIGN_OR_RETURN(next.scores, ComputeHeadImportance(
                                      model, examples, mask, options.importance,
                                      inner, n * next.step, total));
    step = std::move(next);
    if (callbacks.on_step) callbacks.on_step(step);
    if (step.scores.accuracy < bar) break;
    kept = step.step;
  }
  return kept;
}

}  // namespace bertology
