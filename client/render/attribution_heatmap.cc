#include "client/render/attribution_heatmap.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"

namespace bertology::render {
namespace {

constexpr char kCss[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.3em}h2{font-size:1.05em;margin:1.6em 0 .2em}"
    "p{margin:.2em 0}.subtitle{color:#555}"
    ".scroll{overflow-x:auto;padding-bottom:.4em}"
    "table.attribution{border-collapse:collapse;margin-top:.5em}"
    "th,td{padding:0;font-size:12px}"
    "th.method{text-align:right;padding-right:.6em;white-space:nowrap;"
    "font-weight:normal}"
    "th.method .kind{color:#888;font-size:10px;margin-left:.3em}"
    "th.unit{padding:0 .3em .2em;white-space:nowrap;font-weight:normal;"
    "border-bottom:3px solid #bbb}"
    "th.unit.seg1{border-bottom-color:#777}"
    "td.cell{min-width:2.4em;height:1.8em;border:1px solid #fff}"
    ".legend{display:flex;align-items:center;gap:.5em;font-size:12px;"
    "margin:.6em 0}"
    ".legend .bar{width:220px;height:12px;border:1px solid #ccc}";

// The row's scale: its largest finite |score| over the units that are not
// special (over all of them when those have none; 0 when no unit has one).
double RowMax(const AttributionRow& row, const std::vector<bool>& special) {
  double all = 0, text = 0;
  for (size_t j = 0; j < row.scores.size(); ++j) {
    const double v = row.scores[j];
    if (!std::isfinite(v)) continue;
    all = std::max(all, std::abs(v));
    if (special.empty() || !special[j]) text = std::max(text, std::abs(v));
  }
  return text > 0 ? text : all;
}

std::string Legend() {
  std::string stops;
  for (int i = 0; i <= 10; ++i) {
    absl::StrAppend(&stops, i ? "," : "", DivergingColor(-1 + i / 5.0, 1));
  }
  return absl::StrCat(
      "<div class=\"legend\"><span>-1</span><span class=\"bar\" "
      "style=\"background:linear-gradient(to right,",
      stops,
      ")\"></span><span>+1</span><span>score / max |score| of the row "
      "(hover a cell for the score; grey: no value)</span></div>\n");
}

void AppendPanel(std::string* out, const AttributionPanel& panel, int index) {
  absl::StrAppend(out, "<section class=\"input\" data-input=\"", index,
                  "\">\n<h2>", XmlEscape(panel.title), "</h2>\n");
  if (!panel.subtitle.empty()) {
    absl::StrAppend(out, "<p class=\"subtitle\">", XmlEscape(panel.subtitle),
                    "</p>\n");
  }
  absl::StrAppend(out,
                  "<div class=\"scroll\"><table class=\"attribution\" "
                  "data-input=\"",
                  index, "\">\n<thead><tr><th class=\"method\">method</th>");
  for (size_t j = 0; j < panel.units.size(); ++j) {
    const int segment = panel.segments.empty() ? 0 : panel.segments[j];
    absl::StrAppend(out, "<th class=\"unit seg", segment > 0 ? 1 : 0,
                    "\" data-unit=\"", j, "\">", XmlEscape(panel.units[j]),
                    "</th>");
  }
  absl::StrAppend(out, "</tr></thead>\n<tbody>\n");
  for (const AttributionRow& row : panel.rows) {
    const double max_abs = RowMax(row, panel.special);
    absl::StrAppend(out, "<tr class=\"method-row\" data-method=\"",
                    XmlEscape(row.method), "\"><th class=\"method\">",
                    XmlEscape(row.method), "<span class=\"kind\">",
                    row.is_signed ? "signed" : "&#8805; 0", "</span></th>");
    for (size_t j = 0; j < row.scores.size(); ++j) {
      const double v = row.scores[j];
      const bool finite = std::isfinite(v);
      const double scaled =
          finite && max_abs > 0 ? std::clamp(v / max_abs, -1.0, 1.0) : 0;
      const std::string tip = absl::StrCat(
          row.method, " · ", panel.units[j], " (unit ", j,
          "): ", finite ? absl::StrFormat("%.6g", v) : "n/a",
          finite ? absl::StrFormat(" (%+.2f of the row's max)", scaled) : "");
      absl::StrAppend(
          out, "<td class=\"cell\" style=\"background:",
          finite ? DivergingColor(v, max_abs) : kMissingColor,
          "\" data-value=\"", finite ? absl::StrFormat("%.17g", v) : "",
          "\" data-scaled=\"", finite ? absl::StrFormat("%.4f", scaled) : "",
          "\" title=\"", XmlEscape(tip), "\"></td>");
    }
    absl::StrAppend(out, "</tr>\n");
  }
  absl::StrAppend(out, "</tbody></table></div>\n</section>\n");
}

absl::Status Validate(const AttributionPanel& panel, int index) {
  const size_t n = panel.units.size();
  if (!panel.special.empty() && panel.special.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, ": ", panel.special.size(),
                     " special flags for ", n, " units"));
  }
  if (!panel.segments.empty() && panel.segments.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, ": ", panel.segments.size(),
                     " segments for ", n, " units"));
  }
  for (const AttributionRow& row : panel.rows) {
    if (row.scores.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", index, ", ", row.method, ": ",
                       row.scores.size(), " scores for ", n, " units"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> AttributionHeatmapHtml(
    const AttributionPage& page) {
  for (size_t i = 0; i < page.panels.size(); ++i) {
    absl::Status s = Validate(page.panels[i], static_cast<int>(i));
    if (!s.ok()) return s;
  }
  const std::string title =
      page.title.empty() ? "Token attribution" : page.title;
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\"/>\n<title>",
      XmlEscape(title), "</title>\n<style>", kCss,
      "</style>\n</head>\n<body>\n<h1>", XmlEscape(title), "</h1>\n");
  if (!page.subtitle.empty()) {
    absl::StrAppend(&out, "<p class=\"subtitle\">", XmlEscape(page.subtitle),
                    "</p>\n");
  }
  absl::StrAppend(&out, Legend());
  for (size_t i = 0; i < page.panels.size(); ++i) {
    AppendPanel(&out, page.panels[i], static_cast<int>(i));
  }
  absl::StrAppend(&out, "</body>\n</html>\n");
  return out;
}

}  // namespace bertology::render
