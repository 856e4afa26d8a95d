#include "client/cli/patch_output.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

v1::PatchResult Result(int index, int layer, int head, double diff,
                       std::optional<double> effect, int position = -1) {
  v1::PatchResult r;
  r.set_site_index(index);
  r.mutable_site()->set_kind(v1::PATCH_SITE_KIND_HEAD);
  r.mutable_site()->set_layer(layer);
  r.mutable_site()->set_head(head);
  if (position >= 0) r.mutable_site()->set_position(position);
  r.add_logits(0.5f);
  r.add_logits(static_cast<float>(diff) + 0.5f);
  r.set_logit_diff(diff);
  if (effect) r.set_normalized_effect(*effect);
  return r;
}

// Two layers of two heads; L1H0's effect is the strongest (negative) and
// L0H1 has none.
PatchRun HeadRun() {
  PatchRun run;
  run.plan.set_num_sites(4);
  run.plan.set_num_tokens(3);
  for (const char* t : {"[CLS]", "good", "[SEP]"}) run.plan.add_tokens(t);
  run.plan.set_answer(1);
  run.plan.set_foil(0);
  run.plan.set_clean_logit_diff(2.0);
  run.plan.set_corrupted_logit_diff(-2.0);
  run.results = {Result(0, 0, 0, 0.0, 0.5), Result(1, 0, 1, -2.0, {}),
                 Result(2, 1, 0, -6.0, -1.0), Result(3, 1, 1, 2.0, 1.0 / 3)};
  return run;
}

TEST(PatchOutputTest, ChecksEverySiteOnceInOrder) {
  PatchRun run = HeadRun();
  EXPECT_TRUE(CheckPatchRun(run).ok());
  std::swap(run.results[1], run.results[2]);
  EXPECT_FALSE(CheckPatchRun(run).ok());
  run = HeadRun();
  run.results.pop_back();
  EXPECT_FALSE(CheckPatchRun(run).ok());
}

TEST(PatchOutputTest, CsvAndJsonHoldEverySite) {
  const PatchRun run = HeadRun();
  const std::string csv = PatchCsv(run);
  EXPECT_TRUE(absl::StartsWith(
      csv,
      "site_index,kind,layer,head,position,logit_diff,normalized_effect,"
      "method\n0,head,0,0,,0,0.5,exact\n1,head,0,1,,-2,,exact\n"))
      << csv;
  const nlohmann::json j = nlohmann::json::parse(PatchJson(run));
  EXPECT_EQ(j["plan"]["tokens"][1], "good");
  EXPECT_EQ(j["plan"]["direction"], "clean-into-corrupted");
  EXPECT_EQ(j["plan"]["method"], "exact");
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_TRUE(j["results"][1]["normalized_effect"].is_null());
  EXPECT_TRUE(j["results"][0]["position"].is_null());
  EXPECT_DOUBLE_EQ(j["results"][3]["normalized_effect"].get<double>(), 1.0 / 3);
}

// Attribution patching: no logits per site, the method named in the plan
// line, the CSV, the JSON and the figure's subtitle.
TEST(PatchOutputTest, AttributionMethodIsLabelledWithoutLogits) {
  PatchRun run = HeadRun();
  run.plan.set_method(v1::PATCH_METHOD_ATTRIBUTION);
  for (v1::PatchResult& r : run.results) r.clear_logits();
  const std::string csv = PatchCsv(run);
  EXPECT_TRUE(absl::StrContains(csv, "\n0,head,0,0,,0,0.5,attribution\n"))
      << csv;
  const nlohmann::json j = nlohmann::json::parse(PatchJson(run));
  EXPECT_EQ(j["plan"]["method"], "attribution");
  EXPECT_TRUE(j["results"][0]["logits"].empty());
  const std::string table = PatchTable(run, 2);
  EXPECT_TRUE(absl::StrContains(table, "tokens, method attribution\n"))
      << table;
  EXPECT_TRUE(
      absl::StrContains(PatchHeadGrid(run).subtitle, "attribution patching"));
  EXPECT_TRUE(
      absl::StrContains(PatchTable(HeadRun(), 2), "tokens, method exact\n"));
  EXPECT_EQ(PatchMethodName(v1::PATCH_METHOD_UNSPECIFIED), "exact");
}

TEST(PatchOutputTest, TableRanksByAbsoluteEffect) {
  const std::string table = PatchTable(HeadRun(), 2);
  const size_t strongest = table.find("L1H0");
  const size_t second = table.find("L0H0");
  ASSERT_NE(strongest, std::string::npos) << table;
  ASSERT_NE(second, std::string::npos) << table;
  EXPECT_LT(strongest, second);
  EXPECT_EQ(table.find("L1H1"), std::string::npos);  // beyond --top
  EXPECT_NE(table.find("-1.0000"), std::string::npos);
}

// The sites of a table, in the order it lists them.
std::vector<std::string> TableSites(const std::string& table) {
  std::vector<std::string> sites;
  std::istringstream lines(table);
  std::string line;
  bool rows = false;
  while (std::getline(lines, line)) {
    if (absl::StartsWith(line, "rank ")) {
      rows = true;
      continue;
    }
    if (!rows || line.empty()) continue;
    std::istringstream fields(line);
    std::string rank, site;
    fields >> rank >> site;
    sites.push_back(site);
  }
  return sites;
}

// The reviewer's run in small: clean 11.3, corrupted 1.5. Six heads barely
// matter (patched, the logit difference stays near the run it is patched
// into), L1H2 matters most (2.6 when patched into the clean run), L1H3 is
// in between; L2H0 has no effect value.
PatchRun PlantedRun(v1::PatchDirection direction) {
  PatchRun run;
  run.plan.set_num_sites(9);
  run.plan.set_num_tokens(3);
  for (const char* t : {"[CLS]", "good", "[SEP]"}) run.plan.add_tokens(t);
  run.plan.set_answer(1);
  run.plan.set_foil(0);
  run.plan.set_clean_logit_diff(11.3);
  run.plan.set_corrupted_logit_diff(1.5);
  run.plan.set_direction(direction);
  const bool noising = direction == v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN;
  // Effects as the server computes them: (d - 1.5) / 9.8.
  auto site = [&](int index, int layer, int head, double d) {
    return Result(index, layer, head, d, (d - 1.5) / 9.8);
  };
  // An unimportant site leaves the patched run where it started: near the
  // clean score when noising (effect ~ 1), near the corrupted one when
  // denoising (effect ~ 0).
  const std::vector<double> small = {0.05, -0.1, 0.2, -0.15, 0.12, 0.0};
  for (int k = 0; k < 6; ++k) {
    run.results.push_back(
        site(k, k / 4, k % 4, (noising ? 11.3 : 1.5) + small[k]));
  }
  run.results.push_back(Result(6, 2, 0, 5.0, {}));
  // The important site: noising, 11.3 -> 2.6; denoising, 1.5 -> 10.2.
  run.results.push_back(site(7, 1, 2, noising ? 2.6 : 10.2));
  // In between: half the way.
  run.results.push_back(site(8, 1, 3, noising ? 6.0 : 6.8));
  return run;
}

TEST(PatchOutputTest, SiteScoreByDirection) {
  v1::PatchResult r = Result(0, 0, 0, 0, 0.25);
  EXPECT_DOUBLE_EQ(PatchSiteScore(r, v1::PATCH_DIRECTION_CLEAN_INTO_CORRUPTED),
                   0.25);
  EXPECT_DOUBLE_EQ(PatchSiteScore(r, v1::PATCH_DIRECTION_UNSPECIFIED), 0.25);
  EXPECT_DOUBLE_EQ(PatchSiteScore(r, v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN),
                   0.75);
  r.set_normalized_effect(1.2);  // overshoot counts as much either way
  EXPECT_NEAR(PatchSiteScore(r, v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN), 0.2,
              1e-12);
  r.clear_normalized_effect();
  EXPECT_TRUE(
      std::isnan(PatchSiteScore(r, v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN)));
}

// Noising: the most important site (11.3 -> 2.6, effect 0.11) ranks first
// and the six sites at effect ~ 1 last. Ranked by |effect| it came last.
TEST(PatchOutputTest, NoisingTableRanksByDistanceFromOne) {
  const std::string table =
      PatchTable(PlantedRun(v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN), 0);
  EXPECT_NE(table.find("ranked by |1 - normalized_effect|"), std::string::npos)
      << table;
  const std::vector<std::string> sites = TableSites(table);
  ASSERT_EQ(sites.size(), 9u) << table;
  EXPECT_EQ(sites[0], "L1H2") << table;
  EXPECT_EQ(sites[1], "L1H3") << table;
  // Then the unimportant six, by |1 - effect|: 0.2, -0.15, 0.12, -0.1,
  // 0.05, 0 off the clean score.
  EXPECT_EQ(std::vector<std::string>(sites.begin() + 2, sites.end() - 1),
            (std::vector<std::string>{"L0H2", "L0H3", "L1H0", "L0H1", "L0H0",
                                      "L1H1"}))
      << table;
  EXPECT_EQ(sites.back(), "L2H0");  // no effect value: last
  // --top keeps the most important.
  const std::vector<std::string> top = TableSites(
      PatchTable(PlantedRun(v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN), 2));
  EXPECT_EQ(top, (std::vector<std::string>{"L1H2", "L1H3"}));
}

// Denoising: the same sites, now by |effect|: the important site restores
// most of the clean score and ranks first, the unimportant six (effect
// ~ 0) last.
TEST(PatchOutputTest, DenoisingTableRanksByEffect) {
  const std::string table =
      PatchTable(PlantedRun(v1::PATCH_DIRECTION_CLEAN_INTO_CORRUPTED), 2);
  EXPECT_NE(table.find("ranked by |normalized_effect|"), std::string::npos)
      << table;
  EXPECT_EQ(table.find("|1 - normalized_effect|"), std::string::npos);
  EXPECT_EQ(TableSites(table), (std::vector<std::string>{"L1H2", "L1H3"}))
      << table;
}

TEST(PatchOutputTest, HeadGridIsLayersByHeads) {
  const render::PatchGrid g = PatchHeadGrid(HeadRun());
  ASSERT_EQ(g.row_labels.size(), 2u);
  ASSERT_EQ(g.col_labels.size(), 2u);
  ASSERT_EQ(g.values.size(), 4u);
  EXPECT_EQ(g.values[2], -1.0);  // L1H0
  EXPECT_TRUE(std::isnan(g.values[1]));
}

TEST(PatchOutputTest, PositionGridHasARowPerHeadAndAColumnPerToken) {
  PatchRun run = HeadRun();
  run.results.clear();
  int index = 0;
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 2; ++h) {
      for (int p = 0; p < 3; ++p) {
        run.results.push_back(Result(index, l, h, 0, index / 12.0, p));
        ++index;
      }
    }
  }
  run.plan.set_num_sites(index);
  ASSERT_TRUE(CheckPatchRun(run).ok());
  const render::PatchGrid g = PatchPositionGrid(run);
  ASSERT_EQ(g.row_labels.size(), 4u);
  EXPECT_EQ(g.row_labels[2], "L1H0");
  ASSERT_EQ(g.col_labels.size(), 3u);
  EXPECT_EQ(g.col_labels[1], "good");
  ASSERT_EQ(g.values.size(), 12u);
  EXPECT_DOUBLE_EQ(g.values[7], 7 / 12.0);  // L1H0 at "good"
  EXPECT_NE(PatchTable(run, 1).find("L1H1@2"), std::string::npos);
}

TEST(PatchOutputTest, ResidualGridIsLayersByTokens) {
  PatchRun run = HeadRun();
  run.results.clear();
  int index = 0;
  for (int l = 0; l < 3; ++l) {  // 2 layers: inputs of L0, L1, the output
    for (int p = 0; p < 3; ++p) {
      v1::PatchResult r = Result(index, l, 0, 0, index / 9.0, p);
      r.mutable_site()->set_kind(v1::PATCH_SITE_KIND_RESIDUAL);
      r.mutable_site()->clear_head();
      run.results.push_back(r);
      ++index;
    }
  }
  // A head site in the same run is not in this grid.
  run.results.push_back(Result(index++, 0, 1, 0, 5.0, 1));
  run.plan.set_num_sites(index);
  ASSERT_TRUE(CheckPatchRun(run).ok());
  const render::PatchGrid g = PatchResidualGrid(run);
  ASSERT_EQ(g.row_labels.size(), 3u);
  EXPECT_EQ(g.row_labels[2], "L2");
  ASSERT_EQ(g.col_labels.size(), 3u);
  EXPECT_EQ(g.col_labels[2], "[SEP]");
  ASSERT_EQ(g.values.size(), 9u);
  EXPECT_DOUBLE_EQ(g.values[5], 5 / 9.0);  // input of L1 at "[SEP]"
  EXPECT_NE(PatchTable(run, 9).find("resid L2@2"), std::string::npos);
}

}  // namespace
}  // namespace client
}  // namespace bertology
