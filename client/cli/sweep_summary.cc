#include "client/cli/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/mask_groups.h"

namespace bertology {
namespace client {
namespace {

using render::MaskOutcome;

// Random masks have their own table even when they happen to hit one head.
bool IsRandom(const MaskOutcome& m) {
  return m.mask_id.rfind("random-", 0) == 0;
}

std::string Accuracy(double a) {
  return std::isfinite(a) ? absl::StrFormat("%6.2f%%", a * 100) : "    n/a";
}

std::string Change(double percent) {
  return std::isfinite(percent) ? absl::StrFormat("%+7.1f%%", percent)
                                : "     n/a";
}

// The paired 95 % interval of the accuracy change in points, starred when
// it excludes 0 ("n/a" without one).
std::string DeltaInterval(const MaskOutcome& m) {
  if (std::isnan(m.delta_ci_low)) return "n/a";
  return absl::StrFormat("[%+.1f, %+.1f]%s", m.delta_ci_low * 100,
                         m.delta_ci_high * 100, m.distinguishable ? " *" : "");
}

// The relative change of an accuracy that is not one mask's (a mean over
// repeats), with the server's formula.
double RelativeChange(double accuracy, double baseline) {
  return baseline > 0 ? (accuracy / baseline - 1) * 100 : NAN;
}

// Orders NaN last in both directions so "n/a" never tops a list.
double SortKey(const MaskOutcome* m, bool ascending) {
  const double v = m->relative_change_percent;
  if (!std::isfinite(v)) return ascending ? INFINITY : -INFINITY;
  return v;
}

void HeadList(const char* title, const char* none,
              const std::vector<const MaskOutcome*>& heads, std::string* out) {
  absl::StrAppend(out, "\n", title, "\n");
  if (heads.empty()) {
    absl::StrAppend(out, "  (", none, ")\n");
    return;
  }
  absl::StrAppend(out,
                  "  head     accuracy    change   95% CI of the change "
                  "(points)\n");
  for (const MaskOutcome* m : heads) {
    absl::StrAppendFormat(
        out, "  %-7s  %s  %s  %s\n",
        absl::StrCat("L", m->ablated[0].layer, "H", m->ablated[0].head),
        Accuracy(m->accuracy), Change(m->relative_change_percent),
        DeltaInterval(*m));
  }
}

void SingleHeads(const render::SweepResults& sweep, std::string* out) {
  std::vector<const MaskOutcome*> heads;
  render::HeadIndex unused;
  for (const MaskOutcome& m : sweep.results) {
    if (!IsRandom(m) &&
        render::IsSingleHead(m, sweep.num_layers, sweep.num_heads, &unused)) {
      heads.push_back(&m);
    }
  }
  if (heads.empty()) return;
  // Only masks that actually lower (raise) accuracy are listed, so an
  // unimportant head never shows up as "harmful".
  std::vector<const MaskOutcome*> harmful, helpful;
  std::stable_sort(heads.begin(), heads.end(), [](auto* a, auto* b) {
    return SortKey(a, true) < SortKey(b, true);
  });
  for (const MaskOutcome* m : heads) {
    if (harmful.size() < kSummaryTopHeads && m->relative_change_percent < 0) {
      harmful.push_back(m);
    }
  }
  std::stable_sort(heads.begin(), heads.end(), [](auto* a, auto* b) {
    return SortKey(a, false) > SortKey(b, false);
  });
  for (const MaskOutcome* m : heads) {
    if (helpful.size() < kSummaryTopHeads && m->relative_change_percent > 0) {
      helpful.push_back(m);
    }
  }
  // A head with no relative change (a zero baseline) is not one that
  // "changes nothing".
  int lower = 0, higher = 0, unknown = 0;
  for (const MaskOutcome* m : heads) {
    lower += m->relative_change_percent < 0 ? 1 : 0;
    higher += m->relative_change_percent > 0 ? 1 : 0;
    unknown += std::isnan(m->relative_change_percent) ? 1 : 0;
  }
  absl::StrAppendFormat(out,
                        "\nSingle heads: %d masked one at a time; %d lower "
                        "accuracy, %d raise it, %d change nothing",
                        heads.size(), lower, higher,
                        heads.size() - lower - higher - unknown);
  if (unknown > 0) {
    absl::StrAppendFormat(out, ", %d n/a (baseline accuracy 0)", unknown);
  }
  int distinguishable = 0;
  for (const MaskOutcome* m : heads) distinguishable += m->distinguishable;
  absl::StrAppendFormat(out,
                        "; %d of the changes are distinguishable from 0 "
                        "(95%% paired interval excludes it, marked *)\n",
                        distinguishable);
  HeadList("Most harmful single heads (accuracy falls):",
           "none: no single head lowers accuracy", harmful, out);
  HeadList("Most helpful single heads (accuracy rises):",
           "none: no single head raises accuracy", helpful, out);
}

void WholeLayers(const render::SweepResults& sweep, std::string* out) {
  std::vector<std::pair<int, const MaskOutcome*>> layers;
  for (const MaskOutcome& m : sweep.results) {
    int layer;
    if (!IsRandom(m) &&
        render::IsWholeLayer(m, sweep.num_layers, sweep.num_heads, &layer)) {
      layers.emplace_back(layer, &m);
    }
  }
  if (layers.empty()) return;
  std::stable_sort(layers.begin(), layers.end(),
                   [](auto& a, auto& b) { return a.first < b.first; });
  absl::StrAppend(out, "\nWhole layers masked:\n",
                  "  layer    accuracy    change   95% CI of the change "
                  "(points)\n");
  for (const auto& [layer, m] : layers) {
    absl::StrAppendFormat(
        out, "  %-6d   %s  %s  %s\n", layer, Accuracy(m->accuracy),
        Change(m->relative_change_percent), DeltaInterval(*m));
  }
}

void RandomMasks(const render::SweepResults& sweep, std::string* out) {
  const std::vector<render::FractionSeries> series =
      render::RandomSeries(sweep);
  if (series.empty()) return;
  absl::StrAppend(out, "\nRandom masks (mean accuracy over repeats):\n",
                  "  layers        fraction  heads  repeats    mean     "
                  "min      max     change\n");
  for (const render::FractionSeries& s : series) {
    for (const render::FractionPoint& p : s.points) {
      absl::StrAppendFormat(
          out, "  %-12s  %8.2f  %5d  %7d  %s %s %s %s\n", s.label, p.fraction,
          p.num_ablated, p.repeats, Accuracy(p.mean_accuracy),
          Accuracy(p.min_accuracy), Accuracy(p.max_accuracy),
          Change(RelativeChange(p.mean_accuracy, sweep.baseline.accuracy)));
    }
  }
}

// Explicit, keep-only and any other masks the groups above do not cover.
void OtherMasks(const render::SweepResults& sweep, std::string* out) {
  std::vector<const MaskOutcome*> other;
  for (const MaskOutcome& m : sweep.results) {
    render::HeadIndex h;
    int l;
    if (IsRandom(m) ||
        render::IsSingleHead(m, sweep.num_layers, sweep.num_heads, &h) ||
        render::IsWholeLayer(m, sweep.num_layers, sweep.num_heads, &l)) {
      continue;
    }
    other.push_back(&m);
  }
  if (other.empty()) return;
  // Only zeroed heads count as masked; a dense mask's 0 < v < 1 heads are
  // scaled, and said so.
  absl::StrAppend(
      out, "\nOther masks:\n",
      "  mask                  heads masked  scaled  accuracy    change\n");
  for (const MaskOutcome* m : other) {
    absl::StrAppendFormat(out, "  %-20s  %12d  %6d  %s  %s\n", m->mask_id,
                          render::NumZeroed(*m), m->scaled.size(),
                          Accuracy(m->accuracy),
                          Change(m->relative_change_percent));
  }
}

}  // namespace

std::string SweepSummaryTable(const render::SweepResults& sweep,
                              const std::string& mode) {
  const MaskOutcome& base = sweep.baseline;
  std::string out = absl::StrFormat(
      "Sweep of %s (%s ablation): %d masks, %d examples, %d layers x %d "
      "heads\nBaseline accuracy (no mask): %s (%d/%d correct; 95%% CI "
      "%.2f-%.2f%%)\n",
      sweep.model.empty() ? "the default model" : sweep.model, mode,
      sweep.results.size(), base.examples, sweep.num_layers, sweep.num_heads,
      absl::StripLeadingAsciiWhitespace(Accuracy(base.accuracy)), base.correct,
      base.examples, base.accuracy_ci_low * 100, base.accuracy_ci_high * 100);
  SingleHeads(sweep, &out);
  WholeLayers(sweep, &out);
  RandomMasks(sweep, &out);
  OtherMasks(sweep, &out);
  absl::StrAppend(
      &out,
      "\nchange = accuracy with the mask / baseline accuracy - 1; CI = the "
      "paired 95% interval of accuracy - baseline accuracy, in points (* "
      "where it excludes 0)\n");
  return out;
}

}  // namespace client
}  // namespace bertology
