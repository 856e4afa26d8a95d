#include "client/cli/attribute_output.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

// A result as the server sends it: units = the pieces, one score each.
v1::AttributionResult Result(int index, const std::vector<std::string>& units,
                             int target) {
  v1::AttributionResult r;
  r.set_input_index(index);
  r.set_target(target);
  r.set_output(v1::ATTRIBUTION_OUTPUT_LOGIT);
  r.set_output_value(1.5);
  r.add_logits(-0.25f);
  r.add_logits(1.5f);
  for (size_t u = 0; u < units.size(); ++u) {
    v1::AttentionUnit* unit = r.add_units();
    unit->set_text(units[u]);
    unit->set_first_token(static_cast<int>(u));
    unit->set_num_tokens(1);
    unit->set_special(units[u][0] == '[');
    unit->set_segment(u > 2 ? 1 : 0);
    v1::Token* t = r.add_tokens();
    t->set_text(units[u]);
  }
  v1::MethodAttribution* sal = r.add_methods();
  sal->set_method(v1::ATTRIBUTION_METHOD_SALIENCY);
  v1::MethodAttribution* ig = r.add_methods();
  ig->set_method(v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS);
  ig->set_steps(50);
  ig->set_baseline_output(0.5);
  for (size_t u = 0; u < units.size(); ++u) {
    sal->add_scores(0.1 * (u + 1));
    ig->add_scores(u == 1 ? 0.75 : u == 2 ? 0.3 : -0.025);
  }
  ig->set_completeness_gap(0.001);
  return r;
}

// Two inputs of 4 and 5 units, a unit with a comma and a quote.
AttributionRun TwoInputs() {
  AttributionRun run;
  run.model = "tiny";
  run.label_names = {"negative", "positive"};
  v1::TextInput* a = run.request.add_inputs();
  a->set_text_a("good, \"fine\"");
  v1::TextInput* b = run.request.add_inputs();
  b->set_text_a("it was");
  b->set_text_b("fine");
  run.results = {Result(0, {"[CLS]", "good,", "\"fine\"", "[SEP]"}, 1),
                 Result(1, {"[CLS]", "it", "was", "fine", "[SEP]"}, 0)};
  return run;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(AttributeOutputTest, MethodNamesRoundTrip) {
  const std::vector<v1::AttributionMethod> all = AllAttributionMethods();
  ASSERT_EQ(all.size(), 6u);
  for (v1::AttributionMethod m : all) {
    auto parsed = ParseAttributionMethod(AttributionMethodName(m));
    ASSERT_TRUE(parsed.ok()) << AttributionMethodName(m);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_EQ(AttributionMethodName(v1::ATTRIBUTION_METHOD_ATTENTION_ROLLOUT),
            "rollout");
  auto bad = ParseAttributionMethod("lime");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "saliency"));
  EXPECT_TRUE(IsSignedAttribution(v1::ATTRIBUTION_METHOD_INTEGRATED_GRADIENTS));
  EXPECT_FALSE(IsSignedAttribution(v1::ATTRIBUTION_METHOD_ATTENTION_FLOW));
}

TEST(AttributeOutputTest, ChecksEveryInputOnceAndScoresPerUnit) {
  AttributionRun run = TwoInputs();
  EXPECT_TRUE(CheckAttributionRun(run).ok());
  std::swap(run.results[0], run.results[1]);
  EXPECT_FALSE(CheckAttributionRun(run).ok());
  run = TwoInputs();
  run.results.pop_back();
  EXPECT_FALSE(CheckAttributionRun(run).ok());
  run = TwoInputs();
  run.results[1].mutable_methods(1)->mutable_scores()->RemoveLast();
  absl::Status s = CheckAttributionRun(run);
  EXPECT_TRUE(absl::StrContains(s.message(), "integrated-gradients")) << s;
}

TEST(AttributeOutputTest, CsvHasARowPerInputUnitAndMethod) {
  const AttributionRun run = TwoInputs();
  const std::string csv = AttributionCsv(run);
  const std::vector<std::string> lines = Lines(csv);
  ASSERT_EQ(lines.size(), 1u + (4 + 5) * 2) << csv;
  EXPECT_EQ(lines[0],
            "input_index,unit,text,segment,special,method,score,target,"
            "completeness_gap");
  EXPECT_EQ(lines[1], "0,0,[CLS],0,1,saliency,0.10000000000000001,1,");
  // RFC 4180: the comma and the quotes stay inside one field.
  EXPECT_EQ(lines[4], "0,1,\"good,\",0,0,integrated-gradients,0.75,1,0.001");
  EXPECT_EQ(lines[6],
            "0,2,\"\"\"fine\"\"\",0,0,integrated-gradients,0.29999999999999999,"
            "1,0.001");
  EXPECT_TRUE(absl::StartsWith(lines[9], "1,0,[CLS],0,1,saliency,"));
}

// What the end-to-end test checks on the real files: the CSV's scores are
// the JSON's, to the last digit.
TEST(AttributeOutputTest, JsonHoldsTheCsvScores) {
  const AttributionRun run = TwoInputs();
  const nlohmann::json j = nlohmann::json::parse(AttributionJson(run));
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["output"], "logit");
  EXPECT_EQ(j["baseline"], "pad");
  EXPECT_EQ(j["rule"], "gauss-legendre");
  EXPECT_EQ(j["methods"], nlohmann::json({"saliency", "integrated-gradients"}));
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& r1 = j["results"][1];
  EXPECT_EQ(r1["text_b"], "fine");
  EXPECT_EQ(r1["target_label"], "negative");
  EXPECT_EQ(r1["units"].size(), 5u);
  EXPECT_EQ(r1["methods"][0]["completeness_gap"], nullptr);
  EXPECT_DOUBLE_EQ(r1["methods"][1]["completeness_gap"].get<double>(), 0.001);
  EXPECT_EQ(r1["methods"][1]["steps"], 50);
  const std::vector<std::string> lines = Lines(AttributionCsv(run));
  for (size_t k = 1; k < lines.size(); ++k) {
    // The text field of this run holds no comma after the first input.
    if (k <= 8) continue;
    const std::vector<std::string> f = absl::StrSplit(lines[k], ',');
    int input, unit;
    double score;
    ASSERT_TRUE(absl::SimpleAtoi(f[0], &input));
    ASSERT_TRUE(absl::SimpleAtoi(f[1], &unit));
    ASSERT_TRUE(absl::SimpleAtod(f[6], &score));
    const int m = f[5] == "saliency" ? 0 : 1;
    EXPECT_EQ(score,
              j["results"][input]["methods"][m]["scores"][unit].get<double>())
        << lines[k];
  }
}

TEST(AttributeOutputTest, TableHasAColumnPerMethodAndTheGap) {
  const std::string table = AttributionTable(TwoInputs());
  EXPECT_TRUE(absl::StrContains(table, "input 1: \"it was\" | \"fine\""))
      << table;
  EXPECT_TRUE(absl::StrContains(table, "explains logit[1] (positive) = 1.5000"))
      << table;
  EXPECT_TRUE(absl::StrContains(table, "saliency  integrated-gradients"))
      << table;
  EXPECT_TRUE(
      absl::StrContains(table, "integrated-gradients: completeness gap 0.001"))
      << table;
  // f(x) - f(baseline) = 1.5 - 0.5 beside the scores' sum.
  EXPECT_TRUE(absl::StrContains(table, "f(x) - f(baseline) = 1.0000")) << table;
  // A line per unit: "   3  fine" in the second input.
  EXPECT_TRUE(absl::StrContains(table, "\n   3  fine ")) << table;
}

TEST(AttributeOutputTest, OutDirWritesThreeFilesAndASummary) {
  absl::StatusOr<CommandOutput> out = AttributeOutput(TwoInputs(), "/tmp/x");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->files.size(), 3u);
  EXPECT_EQ(out->files[0].name, "attribution.csv");
  EXPECT_EQ(out->files[1].name, "attribution.json");
  EXPECT_EQ(out->files[2].name, "heatmap.html");
  EXPECT_TRUE(absl::StrContains(out->files[2].contents, "method-row"));
  EXPECT_EQ(Lines(out->stdout_after).size(), 2u) << out->stdout_after;
  absl::StatusOr<CommandOutput> table = AttributeOutput(TwoInputs(), "");
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(table->files.empty() || table->dir.empty());
  EXPECT_TRUE(absl::StrContains(table->stdout_text, "unit  text"));
}

TEST(AttributeOutputTest, HeatmapHasAPanelPerInputAndARowPerMethod) {
  const render::AttributionPage page = AttributionHeatmap(TwoInputs());
  ASSERT_EQ(page.panels.size(), 2u);
  EXPECT_EQ(page.panels[1].units.size(), 5u);
  ASSERT_EQ(page.panels[1].rows.size(), 2u);
  EXPECT_EQ(page.panels[1].rows[1].method, "integrated-gradients");
  EXPECT_TRUE(page.panels[1].rows[1].is_signed);
  EXPECT_FALSE(page.panels[1].rows[0].is_signed);
  EXPECT_EQ(page.panels[1].segments[4], 1);
  EXPECT_TRUE(absl::StrContains(page.panels[0].subtitle, "completeness gap"));
}

}  // namespace
}  // namespace client
}  // namespace bertology
