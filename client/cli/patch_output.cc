#include "client/cli/patch_output.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsResidual(const v1::PatchSite& site) {
  return site.kind() == v1::PATCH_SITE_KIND_RESIDUAL;
}

double Effect(const v1::PatchResult& r) {
  return r.has_normalized_effect() ? r.normalized_effect() : kNaN;
}

bool IsAttribution(const v1::PatchPlan& plan) {
  return plan.method() == v1::PATCH_METHOD_ATTRIBUTION;
}

std::string Subtitle(const v1::PatchPlan& plan) {
  return absl::StrFormat(
      "%s%s · logit[%d] - logit[%d]: clean %.3f, corrupted %.3f · 1 = clean "
      "behaviour",
      DirectionName(plan.direction()),
      IsAttribution(plan) ? " · attribution patching (first-order estimate)"
                          : "",
      plan.answer(), plan.foil(), plan.clean_logit_diff(),
      plan.corrupted_logit_diff());
}

}  // namespace

absl::Status CheckPatchRun(const PatchRun& run) {
  for (size_t i = 0; i < run.results.size(); ++i) {
    if (run.results[i].site_index() != static_cast<int>(i)) {
      return absl::InternalError(absl::StrCat("patch result ", i, " is site ",
                                              run.results[i].site_index(),
                                              ", expected site ", i));
    }
  }
  if (static_cast<int>(run.results.size()) != run.plan.num_sites()) {
    return absl::InternalError(absl::StrCat("the server sent ",
                                            run.results.size(), " of ",
                                            run.plan.num_sites(), " sites"));
  }
  return absl::OkStatus();
}

std::string DirectionName(v1::PatchDirection direction) {
  return direction == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN
             ? "corrupted-into-clean"
             : "clean-into-corrupted";
}

std::string PatchMethodName(v1::PatchMethod method) {
  return method == v1::PATCH_METHOD_ATTRIBUTION ? "attribution" : "exact";
}

std::string SiteName(const v1::PatchSite& site) {
  std::string name = IsResidual(site)
                         ? absl::StrCat("resid L", site.layer())
                         : absl::StrCat("L", site.layer(), "H", site.head());
  if (site.has_position()) absl::StrAppend(&name, "@", site.position());
  return name;
}

std::string PatchJson(const PatchRun& run) {
  const v1::PatchPlan& p = run.plan;
  nlohmann::json plan{
      {"num_sites", p.num_sites()},
      {"num_tokens", p.num_tokens()},
      {"tokens",
       std::vector<std::string>(p.tokens().begin(), p.tokens().end())},
      {"corrupted_tokens",
       std::vector<std::string>(p.corrupted_tokens().begin(),
                                p.corrupted_tokens().end())},
      {"answer", p.answer()},
      {"foil", p.foil()},
      {"clean_logits",
       std::vector<float>(p.clean_logits().begin(), p.clean_logits().end())},
      {"corrupted_logits", std::vector<float>(p.corrupted_logits().begin(),
                                              p.corrupted_logits().end())},
      {"clean_logit_diff", p.clean_logit_diff()},
      {"corrupted_logit_diff", p.corrupted_logit_diff()},
      {"direction", DirectionName(p.direction())},
      {"method", PatchMethodName(p.method())}};
  nlohmann::json results = nlohmann::json::array();
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    results.push_back(
        {{"site_index", r.site_index()},
         {"kind", IsResidual(s) ? "residual" : "head"},
         {"layer", s.layer()},
         {"head", s.head()},
         {"position", s.has_position() ? nlohmann::json(s.position())
                                       : nlohmann::json(nullptr)},
         {"logits", std::vector<float>(r.logits().begin(), r.logits().end())},
         {"logit_diff", r.logit_diff()},
         {"normalized_effect", r.has_normalized_effect()
                                   ? nlohmann::json(r.normalized_effect())
                                   : nlohmann::json(nullptr)}});
  }
  return nlohmann::json{{"plan", plan}, {"results", results}}.dump(2) + "\n";
}

std::string PatchCsv(const PatchRun& run) {
  std::string out =
      "site_index,kind,layer,head,position,logit_diff,normalized_effect,"
      "method\n";
  const std::string method = PatchMethodName(run.plan.method());
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    absl::StrAppend(&out, r.site_index(), ",",
                    IsResidual(s) ? "residual" : "head", ",", s.layer(), ",",
                    s.head(), ",",
                    s.has_position() ? absl::StrCat(s.position()) : "", ",",
                    absl::StrFormat("%.17g", r.logit_diff()), ",",
                    r.has_normalized_effect()
                        ? absl::StrFormat("%.17g", r.normalized_effect())
                        : "",
                    ",", method, "\n");
  }
  return out;
}

double PatchSiteScore(const v1::PatchResult& result,
                      v1::PatchDirection direction) {
  if (!result.has_normalized_effect()) return kNaN;
  const double e = result.normalized_effect();
  return direction == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN
             ? std::abs(1.0 - e)
             : std::abs(e);
}

std::string PatchScoreName(v1::PatchDirection direction) {
  return direction == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN
             ? "|1 - normalized_effect|"
             : "|normalized_effect|";
}

std::string PatchTable(const PatchRun& run, int top) {
  const v1::PatchPlan& p = run.plan;
  const v1::PatchDirection direction = p.direction();
  const bool noising = direction == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN;
  std::string out = absl::StrFormat(
      "%s, %d sites, %d tokens, method %s%s\nlogit[%d] - logit[%d]: clean "
      "%.4f, corrupted %.4f\nranked by %s: %s\n",
      DirectionName(direction), p.num_sites(), p.num_tokens(),
      PatchMethodName(p.method()),
      // The exact table keeps its lines (scripts cut it by line number).
      IsAttribution(p) ? "\n(attribution patching: each logit_diff is the "
                         "first-order estimate from one forward and one "
                         "backward pass)"
                       : "",
      p.answer(), p.foil(), p.clean_logit_diff(), p.corrupted_logit_diff(),
      PatchScoreName(direction),
      noising ? "how much of the clean behaviour the site alone destroys "
                "(noising; 0 = no change)"
              : "how much of the clean behaviour the site alone restores "
                "(denoising; 0 = no change)");
  std::vector<const v1::PatchResult*> order;
  for (const v1::PatchResult& r : run.results) order.push_back(&r);
  std::stable_sort(
      order.begin(), order.end(),
      [&](const v1::PatchResult* a, const v1::PatchResult* b) {
        if (a->has_normalized_effect() != b->has_normalized_effect()) {
          return a->has_normalized_effect();
        }
        return PatchSiteScore(*a, direction) > PatchSiteScore(*b, direction);
      });
  if (top > 0 && static_cast<int>(order.size()) > top) order.resize(top);
  absl::StrAppendFormat(&out, "\n%-5s %-16s %-12s %-10s %-17s %s\n", "rank",
                        "site", "token", "logit_diff", "normalized_effect",
                        PatchScoreName(direction));
  for (size_t i = 0; i < order.size(); ++i) {
    const v1::PatchResult& r = *order[i];
    const v1::PatchSite& s = r.site();
    const std::string token =
        s.has_position() && s.position() >= 0 && s.position() < p.tokens_size()
            ? p.tokens(s.position())
            : "";
    absl::StrAppendFormat(
        &out, "%-5d %-16s %-12s %-10.4f %-17s %s\n", static_cast<int>(i + 1),
        SiteName(s), token, r.logit_diff(),
        r.has_normalized_effect()
            ? absl::StrFormat("%+.4f", r.normalized_effect())
            : "n/a",
        r.has_normalized_effect()
            ? absl::StrFormat("%.4f", PatchSiteScore(r, direction))
            : "n/a");
  }
  return out;
}

render::PatchGrid PatchHeadGrid(const PatchRun& run) {
  int layers = 0, heads = 0;
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (IsResidual(s) || s.has_position()) continue;
    layers = std::max(layers, s.layer() + 1);
    heads = std::max(heads, s.head() + 1);
  }
  render::PatchGrid grid;
  grid.title = "Activation patching: normalized effect of each head";
  grid.subtitle = Subtitle(run.plan);
  grid.row_axis = "layer";
  grid.col_axis = "head";
  for (int l = 0; l < layers; ++l)
    grid.row_labels.push_back(absl::StrCat("L", l));
  for (int h = 0; h < heads; ++h)
    grid.col_labels.push_back(absl::StrCat("H", h));
  grid.values.assign(static_cast<size_t>(layers) * heads, kNaN);
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (IsResidual(s) || s.has_position() || s.layer() < 0 || s.head() < 0) {
      continue;
    }
    grid.values[static_cast<size_t>(s.layer()) * heads + s.head()] = Effect(r);
  }
  return grid;
}

render::PatchGrid PatchPositionGrid(const PatchRun& run) {
  const v1::PatchPlan& p = run.plan;
  int tokens = p.num_tokens();
  std::map<std::pair<int, int>, int> row_of;  // (layer, head) -> row
  render::PatchGrid grid;
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (IsResidual(s) || !s.has_position()) continue;
    tokens = std::max(tokens, s.position() + 1);
    auto [it, added] = row_of.emplace(std::make_pair(s.layer(), s.head()),
                                      static_cast<int>(row_of.size()));
    if (added) {
      grid.row_labels.push_back(absl::StrCat("L", s.layer(), "H", s.head()));
    }
  }
  grid.title = "Activation patching: normalized effect per head and token";
  grid.subtitle = Subtitle(p);
  grid.row_axis = "layer·head";
  grid.col_axis = "clean token";
  for (int t = 0; t < tokens; ++t) {
    grid.col_labels.push_back(t < p.tokens_size() ? p.tokens(t)
                                                  : absl::StrCat(t));
  }
  grid.values.assign(grid.row_labels.size() * tokens, kNaN);
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (IsResidual(s) || !s.has_position() || s.position() < 0) continue;
    const int row = row_of.at({s.layer(), s.head()});
    grid.values[static_cast<size_t>(row) * tokens + s.position()] = Effect(r);
  }
  return grid;
}

render::PatchGrid PatchResidualGrid(const PatchRun& run) {
  const v1::PatchPlan& p = run.plan;
  int layers = 0, tokens = p.num_tokens();
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (!IsResidual(s) || !s.has_position()) continue;
    layers = std::max(layers, s.layer() + 1);
    tokens = std::max(tokens, s.position() + 1);
  }
  render::PatchGrid grid;
  grid.title = "Activation patching: the residual stream per layer and token";
  grid.subtitle = Subtitle(p);
  grid.row_axis = "input of layer";
  grid.col_axis = "clean token";
  for (int l = 0; l < layers; ++l) {
    grid.row_labels.push_back(absl::StrCat("L", l));
  }
  for (int t = 0; t < tokens; ++t) {
    grid.col_labels.push_back(t < p.tokens_size() ? p.tokens(t)
                                                  : absl::StrCat(t));
  }
  grid.values.assign(static_cast<size_t>(layers) * tokens, kNaN);
  for (const v1::PatchResult& r : run.results) {
    const v1::PatchSite& s = r.site();
    if (!IsResidual(s) || !s.has_position() || s.layer() < 0 ||
        s.position() < 0) {
      continue;
    }
    grid.values[static_cast<size_t>(s.layer()) * tokens + s.position()] =
        Effect(r);
  }
  return grid;
}

}  // namespace client
}  // namespace bertology
