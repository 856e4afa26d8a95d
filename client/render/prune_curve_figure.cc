#include "client/render/prune_curve_figure.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

constexpr double kWidth = 640, kHeight = 400;
constexpr double kLeft = 70, kRight = 30, kTop = 60, kBottom = 60;

}  // namespace

std::string PruneCurveSvg(const std::string& subtitle, int total_heads,
                          const std::vector<PrunePoint>& steps,
                          double threshold_accuracy, int kept_step) {
  std::string out;
  OpenSvg(&out, kWidth, kHeight);
  SvgText(&out, kWidth / 2, 24, "Accuracy as heads are pruned", 16);
  SvgText(&out, kWidth / 2, 44, subtitle, 12);
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  double lo = std::isfinite(threshold_accuracy) ? threshold_accuracy : 1.0;
  double hi = 0;
  for (const PrunePoint& p : steps) {
    lo = std::min(lo, p.accuracy);
    hi = std::max(hi, p.accuracy);
  }
  if (steps.empty()) lo = 0, hi = 1;
  const std::vector<double> ticks = NiceTicks(lo, hi, 5);
  const double y0 = ticks.front(), y1 = ticks.back();
  const int n = std::max(1, total_heads);
  auto x_of = [&](int heads_left) {
    return kLeft + plot_w * (1.0 - static_cast<double>(heads_left) / n);
  };
  auto y_of = [&](double acc) {
    return kTop + plot_h * (1.0 - (acc - y0) / std::max(1e-12, y1 - y0));
  };
  absl::StrAppend(
      &out, absl::StrFormat("<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" "
                            "width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                            "stroke=\"#888\"/>\n",
                            kLeft, kTop, plot_w, plot_h));
  for (double t : ticks) {
    SvgText(&out, kLeft - 8, y_of(t) + 4, absl::StrFormat("%.3g", t), 11,
            "end");
  }
  for (double t : NiceTicks(0, n, 6)) {
    if (t < 0 || t > n) continue;
    SvgText(&out, x_of(static_cast<int>(t)), kTop + plot_h + 18,
            absl::StrFormat("%g", t), 11);
  }
  SvgText(&out, kLeft + plot_w / 2, kHeight - 16, "heads left", 12);
  SvgText(
      &out, 18, kTop + plot_h / 2, "accuracy", 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 18 %.1f)\"", kTop + plot_h / 2));
  if (std::isfinite(threshold_accuracy)) {
    absl::StrAppend(
        &out,
        absl::StrFormat("<line class=\"threshold\" x1=\"%.1f\" x2=\"%.1f\" "
                        "y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c33\" "
                        "stroke-dasharray=\"6 4\"/>\n",
                        kLeft, kLeft + plot_w, y_of(threshold_accuracy),
                        y_of(threshold_accuracy)));
  }
  std::string points;
  for (const PrunePoint& p : steps) {
    absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", x_of(p.heads_left),
                                             y_of(p.accuracy)));
  }
  absl::StrAppend(&out,
                  "<polyline class=\"curve\" fill=\"none\" "
                  "stroke=\"#2a5db0\" stroke-width=\"2\" points=\"",
                  points, "\"/>\n");
  for (const PrunePoint& p : steps) {
    const bool kept = p.step == kept_step;
    absl::StrAppend(
        &out,
        absl::StrFormat("<circle class=\"point%s\" data-step=\"%d\" "
                        "data-heads-left=\"%d\" data-accuracy=\"%.6g\" "
                        "cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"/>\n",
                        kept ? " kept" : "", p.step, p.heads_left, p.accuracy,
                        x_of(p.heads_left), y_of(p.accuracy), kept ? 6 : 4,
                        kept ? "#c33" : "#2a5db0"));
  }
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
