#include "client/cli/attribute_output.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/render/attribution_heatmap.h"
#include "common/csv.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

using nlohmann::json;

constexpr std::pair<v1::AttributionMethod, const char*> kMethodNames[] = {
    {v1::ATTRIBUTION_METHOD_SALIENCY, "saliency"},
    {v1::ATTRIBUTION_METHOD_GRADIENT_X_INPUT, "gradient-x-input"},
    {v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS, "integrated-gradients"},
    {v1::ATTRIBUTION_METHOD_ATTENTION_ROLLOUT, "rollout"},
    {v1::ATTRIBUTION_METHOD_ATTENTION_FLOW, "flow"},
    {v1::ATTRIBUTION_METHOD_ATTENTION_X_GRADIENT, "attention-x-gradient"},
};

bool IsIg(const v1::MethodAttribution& m) {
  return m.method() == v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS;
}

std::string OutputName(v1::AttributionOutput o) {
  return o == v1::ATTRIBUTION_OUTPUT_PROBABILITY ? "probability" : "logit";
}

std::string BaselineName(v1::AttributionBaseline b) {
  return b == v1::ATTRIBUTION_BASELINE_ZERO   ? "zero"
         : b == v1::ATTRIBUTION_BASELINE_MASK ? "mask"
                                              : "pad";
}

std::string RuleName(v1::IntegrationRule r) {
  return r == v1::INTEGRATION_RULE_RIEMANN_TRAPEZOID ? "trapezoid"
                                                     : "gauss-legendre";
}

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// "class 2 (positive)", or "class 2" without a name.
std::string ClassName(const AttributionRun& run, int target) {
  std::string out = absl::StrCat("class ", target);
  if (target >= 0 && target < static_cast<int>(run.label_names.size())) {
    absl::StrAppend(&out, " (", run.label_names[target], ")");
  }
  return out;
}

// "logit[2] (positive) = 1.2346, at token 3" (the position only where it
// is not the classifier's [CLS]).
std::string Explained(const AttributionRun& run,
                      const v1::AttributionResult& r) {
  std::string out = absl::StrFormat(
      "%s[%d]", OutputName(r.output() ? r.output() : run.request.output()),
      r.target());
  if (r.target() >= 0 && r.target() < static_cast<int>(run.label_names.size()))
    absl::StrAppend(&out, " (", run.label_names[r.target()], ")");
  absl::StrAppendFormat(&out, " = %.4f", r.output_value());
  if (run.request.has_target_position() || r.target_position() != 0) {
    absl::StrAppend(&out, " at token ", r.target_position());
  }
  return out;
}

// "integrated-gradients: completeness gap ..." or "" without a gap.
std::string GapLine(const v1::AttributionResult& r) {
  for (const v1::MethodAttribution& m : r.methods()) {
    if (!IsIg(m) || !m.has_completeness_gap()) continue;
    double sum = 0;
    for (double s : m.scores()) sum += s;
    std::string out = absl::StrFormat(
        "integrated-gradients: completeness gap %.4g (sum of scores %.4f",
        m.completeness_gap(), sum);
    if (m.has_baseline_output()) {
      absl::StrAppendFormat(&out, ", f(x) - f(baseline) = %.4f",
                            r.output_value() - m.baseline_output());
    }
    absl::StrAppendFormat(&out, "; %d steps)", m.steps());
    return out;
  }
  return "";
}

std::string InputText(const v1::TextInput& input) {
  std::string out = absl::StrCat("\"", input.text_a(), "\"");
  if (!input.text_b().empty())
    absl::StrAppend(&out, " | \"", input.text_b(), "\"");
  return out;
}

// Code points, for padding UTF-8 in the table.
size_t Width(const std::string& s) {
  return std::count_if(s.begin(), s.end(),
                       [](char c) { return (c & 0xC0) != 0x80; });
}

std::string PadRight(const std::string& s, size_t width) {
  const size_t w = Width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

}  // namespace

std::string AttributionMethodName(v1::AttributionMethod method) {
  for (const auto& [m, name] : kMethodNames) {
    if (m == method) return name;
  }
  return "unspecified";
}

absl::StatusOr<v1::AttributionMethod> ParseAttributionMethod(
    absl::string_view name) {
  std::vector<std::string> names;
  for (const auto& [m, n] : kMethodNames) {
    if (name == n) return m;
    names.push_back(n);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--method=", name, " is not ", absl::StrJoin(names, ", ")));
}

std::vector<v1::AttributionMethod> AllAttributionMethods() {
  std::vector<v1::AttributionMethod> out;
  for (const auto& [m, name] : kMethodNames) out.push_back(m);
  return out;
}

bool IsSignedAttribution(v1::AttributionMethod method) {
  return method == v1::ATTRIBUTION_METHOD_GRADIENT_X_INPUT ||
         method == v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS;
}

absl::Status CheckAttributionRun(const AttributionRun& run) {
  for (size_t i = 0; i < run.results.size(); ++i) {
    const v1::AttributionResult& r = run.results[i];
    if (r.input_index() != static_cast<int>(i)) {
      return absl::InternalError(absl::StrCat("attribution result ", i,
                                              " is input ", r.input_index()));
    }
    for (const v1::MethodAttribution& m : r.methods()) {
      if (m.scores_size() != r.units_size()) {
        return absl::InternalError(absl::StrCat(
            "input ", i, ", ", AttributionMethodName(m.method()), ": ",
            m.scores_size(), " scores for ", r.units_size(), " units"));
      }
    }
  }
  if (static_cast<int>(run.results.size()) != run.request.inputs_size()) {
    return absl::InternalError(
        absl::StrCat("the server sent ", run.results.size(), " of ",
                     run.request.inputs_size(), " inputs"));
  }
  return absl::OkStatus();
}

std::string AttributionCsv(const AttributionRun& run) {
  std::string out =
      "input_index,unit,text,segment,special,method,score,target,"
      "completeness_gap\n";
  for (const v1::AttributionResult& r : run.results) {
    for (int u = 0; u < r.units_size(); ++u) {
      const v1::AttentionUnit& unit = r.units(u);
      for (const v1::MethodAttribution& m : r.methods()) {
        const bool gap = IsIg(m) && m.has_completeness_gap();
        absl::StrAppend(
            &out, r.input_index(), ",", u, ",", CsvField(unit.text()), ",",
            unit.segment(), ",", unit.special() ? 1 : 0, ",",
            AttributionMethodName(m.method()), ",", CsvNumber(m.scores(u)), ",",
            r.target(), ",", gap ? CsvNumber(m.completeness_gap()) : "", "\n");
      }
    }
  }
  return out;
}

std::string AttributionJson(const AttributionRun& run) {
  const v1::AttributeRequest& q = run.request;
  json methods = json::array();
  if (!run.results.empty()) {
    for (const v1::MethodAttribution& m : run.results[0].methods()) {
      methods.push_back(AttributionMethodName(m.method()));
    }
  }
  json results = json::array();
  for (const v1::AttributionResult& r : run.results) {
    json tokens = json::array(), units = json::array(), ms = json::array();
    for (const v1::Token& t : r.tokens()) {
      tokens.push_back({{"text", t.text()},
                        {"id", t.id()},
                        {"segment", t.segment()},
                        {"word", t.word_index()},
                        {"special", t.special()}});
    }
    for (const v1::AttentionUnit& u : r.units()) {
      units.push_back({{"text", u.text()},
                       {"segment", u.segment()},
                       {"first_token", u.first_token()},
                       {"num_tokens", u.num_tokens()},
                       {"special", u.special()}});
    }
    for (const v1::MethodAttribution& m : r.methods()) {
      json scores = json::array();
      for (double s : m.scores()) scores.push_back(Number(s));
      ms.push_back({{"method", AttributionMethodName(m.method())},
                    {"scores", scores},
                    {"completeness_gap", m.has_completeness_gap()
                                             ? Number(m.completeness_gap())
                                             : json(nullptr)},
                    {"baseline_output", m.has_baseline_output()
                                            ? Number(m.baseline_output())
                                            : json(nullptr)},
                    {"steps", m.steps()}});
    }
    const v1::TextInput input =
        r.input_index() >= 0 && r.input_index() < q.inputs_size()
            ? q.inputs(r.input_index())
            : v1::TextInput();
    const int t = r.target();
    results.push_back(
        {{"input_index", r.input_index()},
         {"text_a", input.text_a()},
         {"text_b", input.text_b()},
         {"target", t},
         {"target_label", t >= 0 && t < static_cast<int>(run.label_names.size())
                              ? json(run.label_names[t])
                              : json(nullptr)},
         {"target_position", r.target_position()},
         {"output_value", Number(r.output_value())},
         {"logits", std::vector<float>(r.logits().begin(), r.logits().end())},
         {"tokens", tokens},
         {"units", units},
         {"methods", ms}});
  }
  return json{{"model", run.model},
              {"output", OutputName(q.output())},
              {"baseline", BaselineName(q.baseline())},
              {"rule", RuleName(q.rule())},
              {"granularity",
               q.granularity() == v1::GRANULARITY_WORD ? "word" : "token"},
              {"methods", methods},
              {"results", results}}
             .dump(2) +
         "\n";
}

std::string AttributionTable(const AttributionRun& run) {
  std::string out;
  for (const v1::AttributionResult& r : run.results) {
    const int i = r.input_index();
    absl::StrAppend(&out, i > 0 ? "\n" : "", "input ", i, ": ",
                    i >= 0 && i < run.request.inputs_size()
                        ? InputText(run.request.inputs(i))
                        : "",
                    "\nexplains ", Explained(run, r), "; logits ",
                    absl::StrJoin(r.logits(), ", ",
                                  [](std::string* o, float v) {
                                    absl::StrAppendFormat(o, "%.4f", v);
                                  }),
                    "\n");
    size_t text_width = 4;
    for (const v1::AttentionUnit& u : r.units()) {
      text_width = std::max(text_width, Width(u.text()));
    }
    absl::StrAppend(&out, "unit  ", PadRight("text", text_width), " seg");
    std::vector<size_t> widths;
    for (const v1::MethodAttribution& m : r.methods()) {
      const std::string name = AttributionMethodName(m.method());
      widths.push_back(std::max<size_t>(10, name.size()));
      absl::StrAppendFormat(&out, "  %*s", widths.back(), name);
    }
    absl::StrAppend(&out, "\n");
    for (int u = 0; u < r.units_size(); ++u) {
      absl::StrAppendFormat(&out, "%4d  %s %3d", u,
                            PadRight(r.units(u).text(), text_width),
                            r.units(u).segment());
      for (int k = 0; k < r.methods_size(); ++k) {
        absl::StrAppendFormat(&out, "  %*.4g", widths[k],
                              r.methods(k).scores(u));
      }
      absl::StrAppend(&out, "\n");
    }
    const std::string gap = GapLine(r);
    if (!gap.empty()) absl::StrAppend(&out, gap, "\n");
  }
  return out;
}

std::string AttributionSummary(const AttributionRun& run) {
  std::string out;
  for (const v1::AttributionResult& r : run.results) {
    absl::StrAppend(&out, "input ", r.input_index(), ": ", r.units_size(),
                    " units, explains ", Explained(run, r));
    const std::string gap = GapLine(r);
    if (!gap.empty()) absl::StrAppend(&out, "; ", gap);
    absl::StrAppend(&out, "\n");
  }
  return out;
}

render::AttributionPage AttributionHeatmap(const AttributionRun& run) {
  render::AttributionPage page;
  page.title = absl::StrCat("Token attribution · ", run.model);
  page.subtitle = absl::StrCat(
      "the ", OutputName(run.request.output()), " of ",
      run.request.has_target() ? ClassName(run, run.request.target())
                               : "each input's predicted class",
      " under the request's head mask · integrated gradients from the ",
      BaselineName(run.request.baseline()), " baseline by ",
      RuleName(run.request.rule()));
  for (const v1::AttributionResult& r : run.results) {
    render::AttributionPanel panel;
    const int i = r.input_index();
    panel.title = absl::StrCat("Input ", i, ": ",
                               i >= 0 && i < run.request.inputs_size()
                                   ? InputText(run.request.inputs(i))
                                   : "");
    panel.subtitle = absl::StrCat("explains ", Explained(run, r));
    const std::string gap = GapLine(r);
    if (!gap.empty()) absl::StrAppend(&panel.subtitle, " · ", gap);
    for (const v1::AttentionUnit& u : r.units()) {
      panel.units.push_back(u.text());
      panel.segments.push_back(u.segment());
      panel.special.push_back(u.special());
    }
    for (const v1::MethodAttribution& m : r.methods()) {
      panel.rows.push_back(
          {AttributionMethodName(m.method()), IsSignedAttribution(m.method()),
           std::vector<double>(m.scores().begin(), m.scores().end())});
    }
    page.panels.push_back(std::move(panel));
  }
  return page;
}

absl::StatusOr<CommandOutput> AttributeOutput(const AttributionRun& run,
                                              const std::string& dir) {
  CommandOutput out;
  if (dir.empty()) {
    out.stdout_text = AttributionTable(run);
    return out;
  }
  absl::StatusOr<std::string> html =
      render::AttributionHeatmapHtml(AttributionHeatmap(run));
  if (!html.ok()) return html.status();
  out.dir = dir;
  out.files = {{"attribution.csv", AttributionCsv(run)},
               {"attribution.json", AttributionJson(run)},
               {"heatmap.html", *std::move(html)}};
  out.stdout_after = AttributionSummary(run);
  return out;
}

}  // namespace client
}  // namespace bertology
