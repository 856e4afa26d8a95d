#include "client/render/segmentation_figure.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/escape.h"
#include "client/render/svg_document.h"

namespace bertology::render {
namespace {

constexpr double kCell = 26, kLeft = 20, kTop = 64, kSegmentGap = 18;

}  // namespace

std::string SegmentationSvg(const SegmentationFigure& f) {
  const size_t n = f.characters.size();
  auto seg = [&](size_t i) { return i < f.segment.size() ? f.segment[i] : 0; };
  // x of each character's box: a gap where the segment changes.
  std::vector<double> x(n);
  double at = kLeft;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && seg(i) != seg(i - 1)) at += kSegmentGap;
    x[i] = at;
    at += kCell;
  }
  const double width = std::max(at + kLeft, 360.0);
  const double height = kTop + kCell + 70;
  std::string out;
  OpenSvg(&out, width, height);
  SvgText(&out, kLeft, 20, f.title, 14, "start", "font-weight=\"bold\"");
  SvgText(&out, kLeft, 38, f.subtitle, 11, "start");
  for (size_t i = 0; i < n; ++i) {
    const bool gold = i < f.gold_end.size() && f.gold_end[i];
    const std::string pred = i < f.predicted.size() ? f.predicted[i] : "none";
    absl::StrAppendFormat(
        &out,
        "<rect class=\"char\" data-index=\"%d\" data-gold-end=\"%d\" "
        "data-predicted=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\" fill=\"%s\" stroke=\"#999\"/>\n",
        i, gold ? 1 : 0, XmlEscape(pred), x[i], kTop, kCell, kCell,
        pred == "internal" ? "#e8f0fb" : "#ffffff");
    SvgText(&out, x[i] + kCell / 2, kTop + kCell * 0.7, f.characters[i], 15);
    const double bx = x[i] + kCell;
    if (gold) {
      absl::StrAppendFormat(
          &out,
          "<line class=\"gold-boundary\" data-index=\"%d\" x1=\"%.1f\" "
          "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
          "stroke-width=\"3\"/>\n",
          i, bx, kTop - 12, bx, kTop + kCell / 2);
    }
    if (pred == "end") {
      absl::StrAppendFormat(
          &out,
          "<line class=\"predicted-boundary\" data-index=\"%d\" x1=\"%.1f\" "
          "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"3\"/>\n",
          i, bx, kTop + kCell / 2, bx, kTop + kCell + 12,
          gold ? "#2ca02c" : "#d62728");
    }
  }
  const double ly = kTop + kCell + 36;
  SvgText(&out, kLeft, ly,
          "above: gold word ends · below: predicted ends (green right, red "
          "wrong) · blue box: predicted word-internal",
          10, "start");
  CloseSvg(&out);
  return out;
}

}  // namespace bertology::render
