// FractionCurveSvg (declared in sweep_figures.h): accuracy against the
// fraction of masked heads, one series per layer range of random masks.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/escape.h"
#include "client/render/mask_groups.h"
#include "client/render/svg_document.h"
#include "client/render/sweep_figures.h"

namespace bertology::render {
namespace {

// Low layers blue, high layers red, then neutral colours.
constexpr const char* kSeriesColors[] = {"#2166ac", "#b2182b", "#4d4d4d",
                                         "#1b7837", "#762a83", "#e08214"};

}  // namespace

std::string FractionCurveSvg(const SweepResults& sweep) {
  const std::vector<FractionSeries> series = RandomSeries(sweep);
  const double base = sweep.baseline.accuracy;
  double x_hi = 0, y_lo = std::isfinite(base) ? base : 1.0,
         y_hi = std::isfinite(base) ? base : 0.0;
  for (const FractionSeries& s : series) {
    for (const FractionPoint& p : s.points) {
      x_hi = std::max(x_hi, p.fraction);
      y_lo = std::min(y_lo, p.min_accuracy);
      y_hi = std::max(y_hi, p.max_accuracy);
    }
  }
  // Pad so points and range bars do not sit on the frame.
  const double y_pad = std::max(0.005, (y_hi - y_lo) * 0.08);
  const std::vector<double> xt = NiceTicks(0, x_hi > 0 ? x_hi * 1.08 : 1.0, 5);
  const std::vector<double> yt =
      NiceTicks(std::max(0.0, y_lo - y_pad), std::min(1.0, y_hi + y_pad), 5);
  const double x0 = 0, x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  const double left = 70, top = 60, plot_w = 480, plot_h = 300;
  const double width = left + plot_w + 170, height = top + plot_h + 60;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return top + (y1 - y) / (y1 - y0) * plot_h; };

  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, (left + plot_w) / 2 + 30, 22,
          "Accuracy vs fraction of randomly masked heads", 15, "middle",
          "font-weight=\"bold\" class=\"title\"");
  SvgText(&out, (left + plot_w) / 2 + 30, 40,
          absl::StrCat(sweep.model.empty() ? "" : sweep.model + " · ",
                       "mean and min-max over repeats"),
          11);
  for (double t : yt) {
    absl::StrAppendFormat(&out,
                          "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
                          left, py(t), left + plot_w, py(t));
    SvgText(&out, left - 6, py(t) + 4, FormatNumber(t * 100, 1), 10, "end");
  }
  for (double t : xt) {
    SvgText(&out, px(t), top + plot_h + 16,
            absl::StrCat(FormatNumber(t * 100, 0), "%"), 10);
  }
  absl::StrAppendFormat(&out,
                        "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" "
                        "width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                        "stroke=\"#000\"/>\n",
                        left, top, plot_w, plot_h);
  if (std::isfinite(base)) {
    absl::StrAppendFormat(&out,
                          "<line class=\"baseline\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
                          "stroke-dasharray=\"5 4\"/>\n",
                          left, py(base), left + plot_w, py(base));
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const FractionSeries& s = series[i];
    const char* color = kSeriesColors[i % std::size(kSeriesColors)];
    std::string points = std::isfinite(base)
                             ? absl::StrFormat("%.1f,%.1f", px(0), py(base))
                             : "";
    for (const FractionPoint& p : s.points) {
      absl::StrAppendFormat(&points, "%s%.1f,%.1f", points.empty() ? "" : " ",
                            px(p.fraction), py(p.mean_accuracy));
    }
    absl::StrAppendFormat(&out,
                          "<polyline class=\"series\" data-series=\"%s\" "
                          "points=\"%s\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\"/>\n",
                          XmlEscape(s.label), points, color);
    for (const FractionPoint& p : s.points) {
      const double x = px(p.fraction);
      absl::StrAppendFormat(&out,
                            "<line class=\"range\" x1=\"%.1f\" y1=\"%.1f\" "
                            "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                            x, py(p.min_accuracy), x, py(p.max_accuracy),
                            color);
      absl::StrAppendFormat(
          &out,
          "<circle class=\"point\" data-series=\"%s\" cx=\"%.1f\" "
          "cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %d heads (%s%%), "
          "accuracy %s%% [%s, %s], %d repeats</title></circle>\n",
          XmlEscape(s.label), x, py(p.mean_accuracy), color, XmlEscape(s.label),
          p.num_ablated, FormatNumber(p.fraction * 100, 1),
          FormatNumber(p.mean_accuracy * 100, 2),
          FormatNumber(p.min_accuracy * 100, 2),
          FormatNumber(p.max_accuracy * 100, 2), p.repeats);
    }
    const double ly = top + 10 + i * 20;
    absl::StrAppendFormat(&out,
                          "<line class=\"legend\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"3\"/>\n",
                          left + plot_w + 15, ly, left + plot_w + 40, ly,
                          color);
    SvgText(&out, left + plot_w + 46, ly + 4, s.label, 11, "start");
  }
  if (series.empty()) {
    SvgText(&out, left + plot_w / 2, top + plot_h / 2, "no data", 14);
  }
  SvgText(&out, left + plot_w / 2, top + plot_h + 40,
          "fraction of heads masked (in the series' layers)", 12);
  SvgText(
      &out, 18, top + plot_h / 2, "accuracy (%)", 12, "middle",
      absl::StrFormat("transform=\"rotate(-90 18 %.1f)\"", top + plot_h / 2));
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
