#include "server/core/attribution/token_attribution.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/attribution/attention_flow.h"
#include "server/core/attribution/quadrature.h"
#include "server/core/model/engine.h"

namespace bertology {
namespace {

bool Wants(const AttributionOptions& o, AttributionMethod m) {
  return std::find(o.methods.begin(), o.methods.end(), m) != o.methods.end();
}

bool NeedsAttention(const AttributionOptions& o) {
  return Wants(o, AttributionMethod::kAttentionRollout) ||
         Wants(o, AttributionMethod::kAttentionFlow) ||
         Wants(o, AttributionMethod::kAttentionXGradient);
}

// f: the target's logit or probability, per row, in float64. `logits` is
// [N, C] or [N, T, C] (a token classifier, read at `position`).
torch::Tensor TargetOutput(const torch::Tensor& logits, int target,
                           int position, AttributionOutput output) {
  torch::Tensor rows = logits.to(torch::kDouble);
  if (rows.dim() == 3) rows = rows.select(1, position);
  if (output == AttributionOutput::kProbability) {
    rows = torch::softmax(rows, -1);
  }
  return rows.select(1, target);
}

std::vector<double> ToVector(const torch::Tensor& t) {
  const torch::Tensor c =
      t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

// What one pass with grad gives for the unmoved input: f(x), the logits,
// d f / d e [T, D] and, when asked, each layer's post-mask attention [H, T,
// T] with d f / d A.
struct GradientPass {
  int target = 0;
  double output_value = 0;
  std::vector<float> logits;
  torch::Tensor words;       // e [T, D], float64, CPU
  torch::Tensor word_grads;  // [T, D], float64, CPU
  std::vector<torch::Tensor> attentions, attention_grads;  // [H, T, T]
};

std::vector<const HeadMask*> Masks(const HeadMask* mask, int rows) {
  if (mask == nullptr) return {};
  return std::vector<const HeadMask*>(rows, mask);
}

absl::StatusOr<GradientPass> RunGradientPass(const Model& model,
                                             const Encoding& encoding,
                                             const HeadMask* mask,
                                             const AttributionOptions& options,
                                             int position) {
  const Engine& engine = model.engine();
  ASSIGN_OR_RETURN(ModelInput input, engine.MakeBatch({&encoding}));
  ASSIGN_OR_RETURN(torch::Tensor words, engine.WordEmbeddings(input.input_ids));
  EngineOptions forward;
  if (NeedsAttention(options)) {
    for (int l = 0; l < model.config().num_hidden_layers; ++l) {
      forward.attention_layers.push_back(l);
    }
  }
  GradientPass pass;
  torch::AutoGradMode grad_mode(true);
  words.requires_grad_(true);
  ASSIGN_OR_RETURN(input.start_hidden, engine.EmbedWords(words, input));
  ASSIGN_OR_RETURN(TensorOutput out,
                   engine.RunWithGrad(input, Masks(mask, 1), forward));
  torch::Tensor at = out.logits[0];
  if (at.dim() == 2) at = at[position];
  const std::vector<double> logits = ToVector(at);
  pass.logits.assign(logits.begin(), logits.end());
  const int classes = static_cast<int>(logits.size());
  if (options.target.has_value()) {
    if (*options.target < 0 || *options.target >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target=", *options.target, " out of range [0, ", classes, ")"));
    }
    pass.target = *options.target;
  } else {
    pass.target = static_cast<int>(
        std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  const torch::Tensor f =
      TargetOutput(out.logits, pass.target, position, options.output).sum();
  pass.output_value = f.item<double>();
  std::vector<torch::Tensor> inputs = {words};
  for (const auto& [layer, probs] : out.attentions) inputs.push_back(probs);
  const auto grads =
      torch::autograd::grad({f}, inputs, {}, /*retain_graph=*/false,
                            /*create_graph=*/false, /*allow_unused=*/true);
  auto as_double = [](const torch::Tensor& t, const torch::Tensor& like) {
    return (t.defined() ? t : torch::zeros_like(like))
        .detach()
        .to(torch::kCPU, torch::kDouble)[0];
  };
  pass.words = words.detach().to(torch::kCPU, torch::kDouble)[0];
  pass.word_grads = as_double(grads[0], words);
  size_t i = 1;
  for (const auto& [layer, probs] : out.attentions) {
    pass.attentions.push_back(
        probs.detach().to(torch::kCPU, torch::kDouble)[0]);
    pass.attention_grads.push_back(as_double(grads[i++], probs));
  }
  return pass;
}

// A'_l of every layer: heads averaged, 0.5 I added, rows renormalised.
std::vector<std::vector<double>> ResidualLayers(const GradientPass& pass,
                                                int tokens) {
  std::vector<std::vector<double>> layers;
  for (const torch::Tensor& a : pass.attentions) {
    layers.push_back(ResidualAttention(ToVector(a.mean(0)), tokens));
  }
  return layers;
}

// Chefer et al. 2021, eq. (13)-(14): R = I; R += E_h[(dA * A)^+] R per layer.
std::vector<double> AttentionXGradient(const GradientPass& pass, int position) {
  const int64_t t = pass.words.size(0);
  torch::Tensor r = torch::eye(t, torch::kDouble);
  for (size_t l = 0; l < pass.attentions.size(); ++l) {
    const torch::Tensor cam =
        (pass.attention_grads[l] * pass.attentions[l]).clamp_min(0).mean(0);
    r = r + cam.matmul(r);
  }
  return ToVector(r[position]);
}

// Integrated gradients' baseline b [T, D] (float64, CPU).
absl::StatusOr<torch::Tensor> Baseline(const Model& model,
                                       const Encoding& encoding,
                                       const torch::Tensor& words,
                                       AttributionBaseline kind) {
  torch::Tensor fill = torch::zeros({words.size(1)}, torch::kDouble);
  if (kind != AttributionBaseline::kZero) {
    const SpecialTokens& specials = model.tokenizer().specials();
    const int id =
        kind == AttributionBaseline::kPad ? specials.pad_id : specials.mask_id;
    if (id < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "baseline=", kind == AttributionBaseline::kPad ? "PAD" : "MASK",
          ": the vocabulary has no ",
          kind == AttributionBaseline::kPad ? "padding" : "mask", " token"));
    }
    ASSIGN_OR_RETURN(
        torch::Tensor row,
        model.engine().WordEmbeddings(torch::full({1, 1}, id, torch::kLong)));
    fill = row.to(torch::kCPU, torch::kDouble).view({-1});
  }
  torch::Tensor b = words.clone();
  for (size_t t = 0; t < encoding.tokens.size(); ++t) {
    const Token& token = encoding.tokens[t];
    if (!(token.special && token.word_index < 0)) b[t] = fill;
  }
  return b;
}

struct IntegratedResult {
  std::vector<double> scores;
  double baseline_output = 0;
  int steps = 0;
};

// Sum over points k of w_k d f / d x at x_k = b + a_k (e - b), rows of
// passes of at most max_batch_rows; the first pass also runs b itself.
absl::StatusOr<IntegratedResult> IntegratedGradients(
    const Model& model, const Encoding& encoding, const HeadMask* mask,
    const AttributionOptions& options, const GradientPass& pass, int position,
    const AttributionCallbacks& callbacks, int64_t* done, int64_t total) {
  ASSIGN_OR_RETURN(const Quadrature q,
                   options.rule == IntegrationRule::kGaussLegendre
                       ? GaussLegendre(options.steps)
                       : RiemannTrapezoid(options.steps));
  ASSIGN_OR_RETURN(const torch::Tensor b,
                   Baseline(model, encoding, pass.words, options.baseline));
  const Engine& engine = model.engine();
  const torch::Tensor diff = pass.words - b;
  std::vector<double> alphas = q.alphas, weights = q.weights;
  alphas.insert(alphas.begin(), 0.0);  // the baseline row, weight 0
  weights.insert(weights.begin(), 0.0);
  torch::Tensor sum = torch::zeros_like(diff);
  IntegratedResult result;
  const int rows_per_pass = std::max(1, options.max_batch_rows);
  for (size_t start = 0; start < alphas.size(); start += rows_per_pass) {
    if (callbacks.is_cancelled && callbacks.is_cancelled()) {
      return absl::CancelledError("attribution cancelled");
    }
    const int n = static_cast<int>(
        std::min(alphas.size() - start, static_cast<size_t>(rows_per_pass)));
    const std::vector<const Encoding*> encodings(n, &encoding);
    ASSIGN_OR_RETURN(ModelInput input, engine.MakeBatch(encodings));
    const torch::Tensor a =
        torch::tensor(std::vector<double>(alphas.begin() + start,
                                          alphas.begin() + start + n),
                      torch::kDouble)
            .view({n, 1, 1});
    torch::AutoGradMode grad_mode(true);
    torch::Tensor x =
        (b.unsqueeze(0) + a * diff.unsqueeze(0))
            .to(input.input_ids.device(), engine.placement().dtype)
            .requires_grad_(true);
    ASSIGN_OR_RETURN(input.start_hidden, engine.EmbedWords(x, input));
    ASSIGN_OR_RETURN(TensorOutput out, engine.RunWithGrad(input, Masks(mask, n),
                                                          EngineOptions()));
    const torch::Tensor f =
        TargetOutput(out.logits, pass.target, position, options.output);
    if (start == 0) result.baseline_output = f[0].item<double>();
    // Rows do not interact: the gradient of the sum at row k is row k's.
    const torch::Tensor g = torch::autograd::grad({f.sum()}, {x})[0].to(
        torch::kCPU, torch::kDouble);
    const torch::Tensor w =
        torch::tensor(std::vector<double>(weights.begin() + start,
                                          weights.begin() + start + n),
                      torch::kDouble)
            .view({n, 1, 1});
    sum += (w * g).sum(0);
    if (callbacks.on_progress) callbacks.on_progress(++*done, total);
  }
  result.scores = ToVector((diff * sum).sum(-1));
  result.steps = options.steps;
  return result;
}

absl::StatusOr<TokenAttribution> Attribute(
    const Model& model, const Encoding& encoding, const HeadMask* mask,
    const AttributionOptions& options, const AttributionCallbacks& callbacks);

int64_t PassesNeeded(const AttributionOptions& options) {
  int64_t passes = 1;
  if (Wants(options, AttributionMethod::kIntegratedGradients)) {
    const int64_t rows = options.steps + 1;
    const int64_t per = std::max(1, options.max_batch_rows);
    passes += (rows + per - 1) / per;
  }
  return passes;
}

}  // namespace

const std::vector<AttributionMethod>& AllAttributionMethods() {
  static const auto* all = new std::vector<AttributionMethod>{
      AttributionMethod::kSaliency,
      AttributionMethod::kGradientXInput,
      AttributionMethod::kIntegratedGradients,
      AttributionMethod::kAttentionRollout,
      AttributionMethod::kAttentionFlow,
      AttributionMethod::kAttentionXGradient};
  return *all;
}

absl::Status CheckAttributionOptions(const Model& model,
                                     const AttributionOptions& options) {
  if (!model.has_classifier()) {
    return absl::FailedPreconditionError(
        "model has no classifier: nothing to attribute");
  }
  const int classes = model.num_labels();
  if (options.target.has_value() &&
      (*options.target < 0 || *options.target >= classes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target=", *options.target, " out of range [0, ", classes, ")"));
  }
  const bool token_model = model.head_kind() == HeadKind::kTokenClassification;
  if (token_model && !options.target_position.has_value()) {
    return absl::InvalidArgumentError(
        "target_position: a token classifier needs the token to explain");
  }
  if (!token_model && options.target_position.has_value()) {
    return absl::InvalidArgumentError(
        "target_position: a sequence classifier reads [CLS] (position 0); "
        "leave it unset");
  }
  if (Wants(options, AttributionMethod::kIntegratedGradients)) {
    RETURN_IF_ERROR(options.rule == IntegrationRule::kGaussLegendre
                        ? GaussLegendre(options.steps).status()
                        : RiemannTrapezoid(options.steps).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<TokenAttribution> AttributeTokens(
    const Model& model, const Encoding& encoding, const HeadMask* mask,
    const AttributionOptions& given, const AttributionCallbacks& callbacks) {
  AttributionOptions options = given;
  if (options.methods.empty()) options.methods = AllAttributionMethods();
  RETURN_IF_ERROR(CheckAttributionOptions(model, options));
  // The engine returns status; the tensor arithmetic here may still throw.
  try {
    return Attribute(model, encoding, mask, options, callbacks);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("attribution failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("attribution failed: ", e.what()));
  }
}

namespace {

absl::StatusOr<TokenAttribution> Attribute(
    const Model& model, const Encoding& encoding, const HeadMask* mask,
    const AttributionOptions& options, const AttributionCallbacks& callbacks) {
  if (mask != nullptr && mask->mode() == AblationMode::kResample) {
    return absl::InvalidArgumentError(
        "head_mask.mode=resample: attribution takes no draws (SweepAblation "
        "serves resample ablation)");
  }
  const int tokens = static_cast<int>(encoding.tokens.size());
  const int position = options.target_position.value_or(0);
  if (position < 0 || position >= tokens) {
    return absl::InvalidArgumentError(absl::StrCat("target_position=", position,
                                                   " out of range [0, ", tokens,
                                                   ") for this input"));
  }
  const int64_t total = PassesNeeded(options);
  int64_t done = 0;
  ASSIGN_OR_RETURN(const GradientPass pass,
                   RunGradientPass(model, encoding, mask, options, position));
  if (callbacks.on_progress) callbacks.on_progress(++done, total);

  TokenAttribution result;
  result.target = pass.target;
  result.target_position = position;
  result.output_value = pass.output_value;
  result.logits = pass.logits;
  std::vector<std::vector<double>> residual;
  if (Wants(options, AttributionMethod::kAttentionRollout) ||
      Wants(options, AttributionMethod::kAttentionFlow)) {
    residual = ResidualLayers(pass, tokens);
  }
  for (AttributionMethod method : options.methods) {
    MethodScores scores;
    scores.method = method;
    switch (method) {
      case AttributionMethod::kSaliency:
        scores.scores = ToVector(pass.word_grads.norm(2, -1));
        break;
      case AttributionMethod::kGradientXInput:
        scores.scores = ToVector((pass.word_grads * pass.words).sum(-1));
        break;
      case AttributionMethod::kIntegratedGradients: {
        ASSIGN_OR_RETURN(
            IntegratedResult ig,
            IntegratedGradients(model, encoding, mask, options, pass, position,
                                callbacks, &done, total));
        double sum = 0;
        for (double s : ig.scores) sum += s;
        scores.scores = std::move(ig.scores);
        scores.baseline_output = ig.baseline_output;
        scores.completeness_gap =
            std::abs(sum - (pass.output_value - ig.baseline_output));
        scores.steps = ig.steps;
        break;
      }
      case AttributionMethod::kAttentionRollout:
        scores.scores = AttentionRollout(residual, tokens, position);
        break;
      case AttributionMethod::kAttentionFlow: {
        ASSIGN_OR_RETURN(scores.scores,
                         AttentionFlow(residual, tokens, position));
        break;
      }
      case AttributionMethod::kAttentionXGradient:
        scores.scores = AttentionXGradient(pass, position);
        break;
    }
    result.methods.push_back(std::move(scores));
  }
  return result;
}

}  // namespace
}  // namespace bertology
