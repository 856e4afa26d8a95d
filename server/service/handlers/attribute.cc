// Attribute: token attribution under the request's head mask. Validates
// the request (every error names its field), runs the core's
// AttributeTokens (server/core/attribution/) per input and streams
// progress, then one result per input, word-level on request.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/attribution/token_attribution.h"
#include "server/core/model/model.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/row_budget.h"

namespace bertology {
namespace {

constexpr int kDefaultSteps = 50;  // captum's n_steps

absl::Status UnknownEnum(const std::string& field, int value,
                         const char* type) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, "=", value, " is not a known ", type));
}

// The proto's methods and the core's, one pair each.
constexpr std::pair<v1::AttributionMethod, AttributionMethod> kMethods[] = {
    {v1::ATTRIBUTION_METHOD_SALIENCY, AttributionMethod::kSaliency},
    {v1::ATTRIBUTION_METHOD_GRADIENT_X_INPUT,
     AttributionMethod::kGradientXInput},
    {v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS,
     AttributionMethod::kIntegratedGradients},
    {v1::ATTRIBUTION_METHOD_ATTENTION_ROLLOUT,
     AttributionMethod::kAttentionRollout},
    {v1::ATTRIBUTION_METHOD_ATTENTION_FLOW, AttributionMethod::kAttentionFlow},
    {v1::ATTRIBUTION_METHOD_ATTENTION_X_GRADIENT,
     AttributionMethod::kAttentionXGradient},
};

absl::StatusOr<AttributionMethod> ParseMethod(int value,
                                              const std::string& field) {
  if (value == v1::ATTRIBUTION_METHOD_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     " is UNSPECIFIED: name a method (an empty list runs all "
                     "six)"));
  }
  for (const auto& [proto, core] : kMethods) {
    if (proto == value) return core;
  }
  return UnknownEnum(field, value, "AttributionMethod");
}

v1::AttributionMethod ToProto(AttributionMethod m) {
  for (const auto& [proto, core] : kMethods) {
    if (core == m) return proto;
  }
  return v1::ATTRIBUTION_METHOD_UNSPECIFIED;
}

// The request's options; every error names its field.
absl::StatusOr<AttributionOptions> ParseOptions(
    const v1::AttributeRequest& request, const ServiceLimits& limits) {
  AttributionOptions o;
  for (int i = 0; i < request.methods_size(); ++i) {
    const std::string field = absl::StrCat("methods[", i, "]");
    ASSIGN_OR_RETURN(AttributionMethod m,
                     ParseMethod(request.methods(i), field));
    for (AttributionMethod seen : o.methods) {
      if (seen == m) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": the method is listed twice"));
      }
    }
    o.methods.push_back(m);
  }
  if (o.methods.empty()) o.methods = AllAttributionMethods();
  if (request.has_target()) o.target = request.target();
  if (request.has_target_position()) {
    o.target_position = request.target_position();
  }
  switch (request.output()) {
    case v1::ATTRIBUTION_OUTPUT_UNSPECIFIED:
    case v1::ATTRIBUTION_OUTPUT_LOGIT:
      o.output = AttributionOutput::kLogit;
      break;
    case v1::ATTRIBUTION_OUTPUT_PROBABILITY:
      o.output = AttributionOutput::kProbability;
      break;
    default:
      return UnknownEnum("output", request.output(), "AttributionOutput");
  }
  switch (request.baseline()) {
    case v1::ATTRIBUTION_BASELINE_UNSPECIFIED:
    case v1::ATTRIBUTION_BASELINE_PAD:
      o.baseline = AttributionBaseline::kPad;
      break;
    case v1::ATTRIBUTION_BASELINE_ZERO:
      o.baseline = AttributionBaseline::kZero;
      break;
    case v1::ATTRIBUTION_BASELINE_MASK:
      o.baseline = AttributionBaseline::kMask;
      break;
    default:
      return UnknownEnum("baseline", request.baseline(), "AttributionBaseline");
  }
  switch (request.rule()) {
    case v1::INTEGRATION_RULE_UNSPECIFIED:
    case v1::INTEGRATION_RULE_GAUSS_LEGENDRE:
      o.rule = IntegrationRule::kGaussLegendre;
      break;
    case v1::INTEGRATION_RULE_RIEMANN_TRAPEZOID:
      o.rule = IntegrationRule::kRiemannTrapezoid;
      break;
    default:
      return UnknownEnum("rule", request.rule(), "IntegrationRule");
  }
  if (request.granularity() != v1::GRANULARITY_UNSPECIFIED &&
      request.granularity() != v1::GRANULARITY_TOKEN &&
      request.granularity() != v1::GRANULARITY_WORD) {
    return UnknownEnum("granularity", request.granularity(), "Granularity");
  }
  o.steps = request.has_steps() ? request.steps() : kDefaultSteps;
  o.max_batch_rows = limits.max_batch_size;
  return o;
}

// Sums token scores over `spans` (a word's score: the sum over its pieces).
std::vector<double> OverSpans(const std::vector<double>& scores,
                              const std::vector<WordSpan>& spans) {
  std::vector<double> out;
  out.reserve(spans.size());
  for (const WordSpan& s : spans) {
    double sum = 0;
    for (int i = 0; i < s.num_tokens; ++i) sum += scores[s.first_token + i];
    out.push_back(sum);
  }
  return out;
}

void FillResult(int index, const Encoding& encoding,
                const v1::AttributeRequest& request, const TokenAttribution& a,
                v1::AttributionResult* out) {
  out->set_input_index(index);
  for (const Token& t : encoding.tokens) FillToken(t, out->add_tokens());
  const std::vector<WordSpan> spans =
      UnitSpans(encoding, request.granularity() == v1::GRANULARITY_WORD);
  FillAttentionUnits(encoding, spans, request.inputs(index),
                     out->mutable_units());
  out->set_target(a.target);
  out->set_target_position(a.target_position);
  out->set_output(request.output() == v1::ATTRIBUTION_OUTPUT_PROBABILITY
                      ? v1::ATTRIBUTION_OUTPUT_PROBABILITY
                      : v1::ATTRIBUTION_OUTPUT_LOGIT);
  out->set_output_value(a.output_value);
  for (float v : a.logits) out->add_logits(v);
  for (const MethodScores& m : a.methods) {
    v1::MethodAttribution* o = out->add_methods();
    o->set_method(ToProto(m.method));
    for (double s : OverSpans(m.scores, spans)) o->add_scores(s);
    if (m.completeness_gap.has_value()) {
      o->set_completeness_gap(*m.completeness_gap);
    }
    if (m.baseline_output.has_value()) {
      o->set_baseline_output(*m.baseline_output);
    }
    o->set_steps(m.steps);
  }
}

}  // namespace

absl::Status HandleAttribute(const HandlerContext& ctx,
                             const v1::AttributeRequest& request,
                             const EventStream<v1::AttributeResponse>& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  RETURN_IF_ERROR(model.CheckCanClassify());
  if (request.inputs_size() == 0) {
    return absl::InvalidArgumentError("inputs is empty: give at least one");
  }
  RETURN_IF_ERROR(
      CheckInputCount(*ctx.limits, request.inputs_size(), "inputs"));
  ASSIGN_OR_RETURN(const AttributionOptions options,
                   ParseOptions(request, *ctx.limits));
  RETURN_IF_ERROR(CheckAttributionOptions(model, options));
  const BertConfig& c = model.config();
  ASSIGN_OR_RETURN(
      const HeadMask mask,
      ParseHeadMask(request.head_mask(), c.num_hidden_layers,
                    c.num_attention_heads, AblationMode::kZero, "head_mask",
                    MaskReferences{served->references.get()}));
  std::vector<Encoding> encodings;
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(
        Encoding e,
        EncodeInput(model.tokenizer(), model.max_seq_len(), request.inputs(i),
                    absl::StrCat("inputs[", i, "]"), *ctx.limits));
    if (options.target_position.has_value() &&
        (*options.target_position < 0 ||
         *options.target_position >= static_cast<int>(e.tokens.size()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target_position=", *options.target_position, " out of range [0, ",
          e.tokens.size(), ") for inputs[", i, "]"));
    }
    encodings.push_back(std::move(e));
  }
  // Integration points run as rows of batched passes: hold them against
  // the replica's row budget as sweeps do.
  ASSIGN_OR_RETURN(const RowBudget::Lease rows,
                   served->sweep_rows->Acquire(options.max_batch_rows));
  const HeadMask* row_mask = mask.IsIdentity() ? nullptr : &mask;
  StreamingCall<v1::AttributeResponse> call(stream);
  const int64_t n = static_cast<int64_t>(encodings.size());
  for (int64_t i = 0; i < n; ++i) {
    AttributionCallbacks callbacks;
    // Progress in inputs, with the fraction of this input's passes done.
    callbacks.on_progress = [&](int64_t done, int64_t total) {
      call.Progress(i * total + done, n * total);
    };
    callbacks.is_cancelled = [&] { return call.Cancelled(); };
    absl::StatusOr<TokenAttribution> a =
        AttributeTokens(model, encodings[i], row_mask, options, callbacks);
    if (!a.ok()) return call.Finish(a.status());
    v1::AttributeResponse event;
    FillResult(static_cast<int>(i), encodings[i], request, *a,
               event.mutable_result());
    if (!call.Write(event)) break;
  }
  return call.Finish(absl::OkStatus());
}

}  // namespace bertology
