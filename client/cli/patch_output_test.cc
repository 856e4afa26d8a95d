#include "client/cli/patch_output.h"

#include <cmath>

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
      "site_index,kind,layer,head,position,logit_diff,normalized_effect\n"
      "0,head,0,0,,0,0.5\n1,head,0,1,,-2,\n"))
      << csv;
  const nlohmann::json j = nlohmann::json::parse(PatchJson(run));
  EXPECT_EQ(j["plan"]["tokens"][1], "good");
  EXPECT_EQ(j["plan"]["direction"], "clean-into-corrupted");
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_TRUE(j["results"][1]["normalized_effect"].is_null());
  EXPECT_TRUE(j["results"][0]["position"].is_null());
  EXPECT_DOUBLE_EQ(j["results"][3]["normalized_effect"].get<double>(), 1.0 / 3);
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
