// Patch: activation patching between a clean and a corrupted input. The
// core's ActivationPatcher runs both once and scores batches of sites as
// rows of one pass; this handler validates, expands the site list, and
// streams the plan and the results with their logit differences.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/core/patch/attribution_patching.h"
#include "server/core/patch/patching.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"
#include "server/service/registry/row_budget.h"

namespace bertology {
namespace {

constexpr int kMaxPatchBatchRows = 4096;

PatchSite ToCore(const v1::PatchSite& s) {
  PatchSite site;
  site.kind = s.kind() == v1::PATCH_SITE_KIND_RESIDUAL
                  ? PatchSite::Kind::kResidual
                  : PatchSite::Kind::kHead;
  site.layer = s.layer();
  site.head = site.kind == PatchSite::Kind::kHead ? s.head() : 0;
  site.position = s.has_position() ? s.position() : -1;
  return site;
}

v1::PatchSite ToProto(const PatchSite& site) {
  v1::PatchSite out;
  const bool head = site.kind == PatchSite::Kind::kHead;
  out.set_kind(head ? v1::PATCH_SITE_KIND_HEAD : v1::PATCH_SITE_KIND_RESIDUAL);
  out.set_layer(site.layer);
  if (head) out.set_head(site.head);
  if (site.position >= 0) out.set_position(site.position);
  return out;
}

// The request's sites in order: explicit ones, then all_heads (layer-major),
// then all_head_positions (layer, head, position), then
// all_residual_positions (layer 0..L, position). Each checked against the
// model and the inputs, at most `max_sites`.
absl::StatusOr<std::vector<PatchSite>> ExpandSites(
    const v1::PatchRequest& request, const ActivationPatcher& patcher,
    int layers, int heads, int max_sites) {
  const int64_t t = patcher.num_tokens();
  const int64_t total =
      request.sites_size() + (request.all_heads() ? layers * heads : 0) +
      (request.all_head_positions() ? int64_t{layers} * heads * t : 0) +
      (request.all_residual_positions() ? int64_t{layers + 1} * t : 0);
  if (total == 0) {
    return absl::InvalidArgumentError(
        "no sites: give sites, all_heads, all_head_positions or "
        "all_residual_positions");
  }
  if (total > max_sites) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the sites expand to ", total,
                     ", over the limit --max_masks_per_sweep=", max_sites));
  }
  std::vector<PatchSite> sites;
  sites.reserve(total);
  for (int i = 0; i < request.sites_size(); ++i) {
    const v1::PatchSite& s = request.sites(i);
    const std::string field = absl::StrCat("sites[", i, "]");
    if (s.kind() != v1::PATCH_SITE_KIND_UNSPECIFIED &&
        s.kind() != v1::PATCH_SITE_KIND_HEAD &&
        s.kind() != v1::PATCH_SITE_KIND_RESIDUAL) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".kind=", static_cast<int>(s.kind()),
                       " is not a known PatchSiteKind"));
    }
    // Unset means every position; a set one must be a token (the core's
    // -1 for "all" is not a value a caller may send).
    if (s.has_position() && s.position() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".position=", s.position(), " out of range [0, ",
                       patcher.num_tokens(), ") (unset: every position)"));
    }
    PatchSite site = ToCore(s);
    RETURN_IF_ERROR(patcher.CheckSite(site, field));
    sites.push_back(site);
  }
  for (int l = 0; request.all_heads() && l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      sites.push_back({PatchSite::Kind::kHead, l, h, -1});
    }
  }
  for (int l = 0; request.all_head_positions() && l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      for (int p = 0; p < t; ++p) {
        sites.push_back({PatchSite::Kind::kHead, l, h, p});
      }
    }
  }
  for (int l = 0; request.all_residual_positions() && l <= layers; ++l) {
    for (int p = 0; p < t; ++p) {
      sites.push_back({PatchSite::Kind::kResidual, l, 0, p});
    }
  }

  return sites;
}

// The answer/foil pair: the request's, or the clean prediction against the
// corrupted one (the clean runner-up when both predict the same class).
absl::Status ChooseAnswerFoil(const v1::PatchRequest& request,
                              const std::vector<float>& clean,
                              const std::vector<float>& corrupted, int* answer,
                              int* foil) {
  const int c = static_cast<int>(clean.size());
  auto argmax = [](const std::vector<float>& v, int skip) {
    int best = -1;
    for (int i = 0; i < static_cast<int>(v.size()); ++i) {
      if (i != skip && (best < 0 || v[i] > v[best])) best = i;
    }
    return best;
  };
  *answer = request.has_answer() ? request.answer() : argmax(clean, -1);
  if (*answer < 0 || *answer >= c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "answer=", *answer, " is not a class index in [0, ", c, ")"));
  }
  if (request.has_foil()) {
    *foil = request.foil();
  } else {
    *foil = argmax(corrupted, -1);
    if (*foil == *answer) *foil = argmax(clean, *answer);
  }
  if (*foil < 0 || *foil >= c || *foil == *answer) {
    return absl::InvalidArgumentError(
        absl::StrCat("foil=", *foil, " must be a class index in [0, ", c,
                     ") other than answer=", *answer));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HandlePatch(const HandlerContext& ctx,
                         const v1::PatchRequest& request,
                         const EventStream<v1::PatchResponse>& stream) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  if (model.head_kind() != HeadKind::kSequenceClassification) {
    RETURN_IF_ERROR(model.CheckCanClassify());
    return absl::FailedPreconditionError(
        "Patch reads a sequence classifier's logits; this model is a token "
        "classifier");
  }
  const PatchDirection direction =
      request.direction() == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN
          ? PatchDirection::kCorruptedIntoClean
          : PatchDirection::kCleanIntoCorrupted;
  if (request.direction() < v1::PATCH_DIRECTION_UNSPECIFIED ||
      request.direction() > v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN) {
    return absl::InvalidArgumentError(
        absl::StrCat("direction=", static_cast<int>(request.direction()),
                     " is not a known PatchDirection"));
  }
  if (request.method() < v1::PATCH_METHOD_UNSPECIFIED ||
      request.method() > v1::PATCH_METHOD_ATTRIBUTION) {
    return absl::InvalidArgumentError(
        absl::StrCat("method=", static_cast<int>(request.method()),
                     " is not a known PatchMethod"));
  }
  const bool attribution = request.method() == v1::PATCH_METHOD_ATTRIBUTION;
  if (request.max_batch_rows() < 0 ||
      request.max_batch_rows() > kMaxPatchBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_rows=", request.max_batch_rows(),
                     " is not in [0, ", kMaxPatchBatchRows, "]"));
  }
  ASSIGN_OR_RETURN(Encoding clean,
                   EncodeInput(model.tokenizer(), model.max_seq_len(),
                               request.clean(), "clean", *ctx.limits));
  ASSIGN_OR_RETURN(Encoding corrupted,
                   EncodeInput(model.tokenizer(), model.max_seq_len(),
                               request.corrupted(), "corrupted", *ctx.limits));
  const BertConfig& c = model.config();
  const int batch_rows = request.max_batch_rows() > 0
                             ? request.max_batch_rows()
                             : ctx.limits->max_batch_size;
  ASSIGN_OR_RETURN(const RowBudget::Lease rows,
                   served->sweep_rows->Acquire(batch_rows + 2));
  ASSIGN_OR_RETURN(
      std::unique_ptr<ActivationPatcher> patcher,
      ActivationPatcher::Create(model, clean, corrupted, direction));
  ASSIGN_OR_RETURN(
      const std::vector<PatchSite> sites,
      ExpandSites(request, *patcher, c.num_hidden_layers, c.num_attention_heads,
                  ctx.limits->max_masks_per_sweep));
  int answer = 0, foil = 0;
  RETURN_IF_ERROR(ChooseAnswerFoil(request, patcher->clean_logits(),
                                   patcher->corrupted_logits(), &answer,
                                   &foil));
  auto diff = [&](const std::vector<float>& logits) {
    return static_cast<double>(logits[answer]) - logits[foil];
  };
  const double clean_diff = diff(patcher->clean_logits());
  const double corrupted_diff = diff(patcher->corrupted_logits());

  v1::PatchResponse plan_event;
  v1::PatchPlan* plan = plan_event.mutable_plan();
  plan->set_num_sites(static_cast<int>(sites.size()));
  plan->set_num_tokens(patcher->num_tokens());
  for (const Token& t : clean.tokens) plan->add_tokens(t.text);
  for (const Token& t : corrupted.tokens) plan->add_corrupted_tokens(t.text);
  plan->set_answer(answer);
  plan->set_foil(foil);
  for (float v : patcher->clean_logits()) plan->add_clean_logits(v);
  for (float v : patcher->corrupted_logits()) plan->add_corrupted_logits(v);
  plan->set_clean_logit_diff(clean_diff);
  plan->set_corrupted_logit_diff(corrupted_diff);
  plan->set_direction(direction == PatchDirection::kCleanIntoCorrupted
                          ? v1::PATCH_DIRECTION_CLEAN_INTO_CORRUPTED
                          : v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN);
  plan->set_method(attribution ? v1::PATCH_METHOD_ATTRIBUTION
                               : v1::PATCH_METHOD_EXACT);
  StreamingCall<v1::PatchResponse> call(stream);
  if (!call.Write(plan_event)) return call.Finish(absl::OkStatus());
  // The runs are float32: inputs that differ in nothing (or nothing that
  // matters) give differences apart by rounding only, and a ratio over
  // that noise would report effects of any size.
  const bool has_ratio =
      std::abs(clean_diff - corrupted_diff) >
      1e-5 * std::max({1.0, std::abs(clean_diff), std::abs(corrupted_diff)});
  auto fill = [&](size_t i, double d, v1::PatchResult* r) {
    r->set_site_index(static_cast<int>(i));
    *r->mutable_site() = ToProto(sites[i]);
    r->set_logit_diff(d);
    if (has_ratio) {
      r->set_normalized_effect((d - corrupted_diff) /
                               (clean_diff - corrupted_diff));
    }
  };
  if (attribution) {
    absl::StatusOr<PatchEstimates> estimates = EstimatePatchEffects(
        model, clean, corrupted, direction, answer, foil, sites);
    if (!estimates.ok()) return call.Finish(estimates.status());
    for (size_t begin = 0; begin < sites.size(); begin += batch_rows) {
      const size_t end = std::min(sites.size(), begin + batch_rows);
      v1::PatchResponse event;
      for (size_t i = begin; i < end; ++i) {
        fill(i, estimates->logit_diffs[i],
             event.mutable_results()->add_results());
      }
      if (!call.Write(event)) break;
    }
    return call.Finish(absl::OkStatus());
  }
  for (size_t begin = 0; begin < sites.size(); begin += batch_rows) {
    if (call.Cancelled()) {
      return absl::CancelledError(absl::StrCat(
          "patching cancelled after ", begin, " of ", sites.size(), " sites"));
    }
    const size_t end = std::min(sites.size(), begin + batch_rows);
    std::vector<std::vector<PatchSite>> batch;
    for (size_t i = begin; i < end; ++i) batch.push_back({sites[i]});
    ASSIGN_OR_RETURN(const std::vector<std::vector<float>> logits,
                     patcher->Run(batch));
    v1::PatchResponse event;
    for (size_t i = begin; i < end; ++i) {
      v1::PatchResult* r = event.mutable_results()->add_results();
      for (float v : logits[i - begin]) r->add_logits(v);
      fill(i, diff(logits[i - begin]), r);
    }
    if (!call.Write(event)) break;
  }
  return call.Finish(absl::OkStatus());
}

}  // namespace bertology
