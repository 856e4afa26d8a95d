#include "client/render/attention_page.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/render/color_scale.h"
#include "client/render/escape.h"
#include "client/render/file_output.h"
#include "client/render/head_view_script.h"
#include "client/render/svg_document.h"
#include "nlohmann/json.hpp"

namespace bertology::render {
namespace {

// Compact decimal for the embedded maps: 4 digits after the point is more
// than the eye can see and keeps a 128-token page small. NaN/inf -> 0.
void AppendWeight(std::string* out, float w) {
  if (!std::isfinite(w) || std::abs(w) < 5e-5f) {
    out->push_back('0');
    return;
  }
  std::string s = absl::StrFormat("%.4f", w);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  out->append(s);
}

// The page's data block. Strings go through nlohmann (valid JSON strings,
// invalid UTF-8 replaced); the caller applies JsonForScript.
std::string DataJson(const AttentionData& data) {
  nlohmann::json head = {{"tokens", data.tokens}, {"segments", data.segments}};
  std::string json =
      head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  json.pop_back();  // the closing brace; maps are appended by hand
  json += ",\"maps\":[";
  for (size_t m = 0; m < data.maps.size(); ++m) {
    const HeadMap& map = data.maps[m];
    absl::StrAppend(&json, m ? "," : "", "{\"layer\":", map.layer,
                    ",\"head\":", map.head, ",\"w\":[");
    for (size_t i = 0; i < map.weights.size(); ++i) {
      if (i) json.push_back(',');
      AppendWeight(&json, map.weights[i]);
    }
    json += "]}";
  }
  json += "]}";
  return json;
}

}  // namespace

absl::Status ValidateAttentionData(const AttentionData& data) {
  const size_t t = data.tokens.size();
  if (!data.segments.empty() && data.segments.size() != t) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segments has ", data.segments.size(), " entries for ", t, " tokens"));
  }
  std::set<std::pair<int, int>> seen;
  for (const HeadMap& m : data.maps) {
    if (m.weights.size() != t * t) {
      return absl::InvalidArgumentError(
          absl::StrCat("map L", m.layer, "H", m.head, " has ", m.weights.size(),
                       " weights; ", t, " tokens need ", t * t));
    }
    if (!seen.insert({m.layer, m.head}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("map L", m.layer, "H", m.head, " appears twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> AttentionPageHtml(const AttentionData& data) {
  absl::Status valid = ValidateAttentionData(data);
  if (!valid.ok()) return valid;
  const std::string title =
      data.title.empty() ? "Attention head view" : data.title;
  std::string out;
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                  "<meta charset=\"utf-8\">\n<title>",
                  XmlEscape(title), "</title>\n<style>", kHeadViewCss,
                  "</style>\n</head>\n<body>\n<h1>", XmlEscape(title),
                  "</h1>\n");
  if (!data.prediction.empty()) {
    absl::StrAppend(&out, "<p class=\"prediction\">",
                    XmlEscape(data.prediction), "</p>\n");
  }
  absl::StrAppend(
      &out,
      "<div class=\"controls\"><label>Layer <select id=\"layer\"></select>"
      "</label><label>Head <select id=\"head\"></select></label>"
      "<span class=\"hint\">hover a token to see only its lines</span>"
      "</div>\n<div class=\"panes\">\n<svg id=\"view\" "
      "xmlns=\"http://www.w3.org/2000/svg\"></svg>\n<svg id=\"matrix\" "
      "xmlns=\"http://www.w3.org/2000/svg\"></svg>\n</div>\n"
      "<noscript>This page needs JavaScript to draw the maps.</noscript>\n"
      "<script type=\"application/json\" id=\"attention-data\">",
      JsonForScript(DataJson(data)), "</script>\n<script>", kHeadViewScript,
      "</script>\n</body>\n</html>\n");
  return out;
}

absl::StatusOr<std::string> AttentionSvg(const AttentionData& data,
                                         const HeadMap& map) {
  const size_t t = data.tokens.size();
  if (map.weights.size() != t * t) {
    return absl::InvalidArgumentError(absl::StrCat(
        "map L", map.layer, "H", map.head, " has ", map.weights.size(),
        " weights; ", t, " tokens need ", t * t));
  }
  const double cell = std::clamp(560.0 / std::max<size_t>(1, t), 6.0, 24.0);
  const double font = std::min(11.0, cell * 0.8);
  const double label = 110, top = 50 + label;
  const double width = label + 20 + cell * t, height = top + cell * t + 20;
  std::string out;
  OpenSvg(&out, std::max(width, 300.0), height);
  SvgText(
      &out, 10, 22,
      absl::StrCat(data.title.empty() ? "" : data.title + " · ", "layer ",
                   map.layer, ", head ", map.head, " (rows attend to columns)"),
      14, "start", "font-weight=\"bold\" class=\"title\"");
  for (size_t i = 0; i < t; ++i) {
    const double c = label + 10 + (i + 0.5) * cell;
    SvgText(&out, label + 4, top + (i + 0.5) * cell + font / 3, data.tokens[i],
            font, "end", "class=\"row-label\"");
    SvgText(&out, c, top - 6, data.tokens[i], font, "start",
            absl::StrFormat("class=\"col-label\" transform=\"rotate(-60 %.1f "
                            "%.1f)\"",
                            c, top - 6));
  }
  for (size_t i = 0; i < t; ++i) {
    for (size_t j = 0; j < t; ++j) {
      const float w = map.weights[i * t + j];
      absl::StrAppendFormat(
          &out,
          "<rect class=\"cell\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
          "height=\"%.2f\" fill=\"%s\"><title>%s → %s: %s</title></rect>\n",
          label + 10 + j * cell, top + i * cell, cell, cell, SequentialColor(w),
          XmlEscape(data.tokens[i]), XmlEscape(data.tokens[j]),
          FormatNumber(w, 4));
    }
  }
  CloseSvg(&out);
  return out;
}

absl::Status WriteAttentionFiles(const AttentionData& data,
                                 const std::string& dir,
                                 std::vector<std::string>* written) {
  absl::StatusOr<std::string> page = AttentionPageHtml(data);
  if (!page.ok()) return page.status();
  absl::Status s = WriteOutputFile(dir, "attention.html", *page, written);
  if (!s.ok()) return s;
  for (const HeadMap& m : data.maps) {
    absl::StatusOr<std::string> svg = AttentionSvg(data, m);
    if (!svg.ok()) return svg.status();
    s = WriteOutputFile(
        dir, absl::StrCat("attention_L", m.layer, "_H", m.head, ".svg"), *svg,
        written);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace bertology::render
