#include "client/cli/sweep_output.h"

#include <cmath>
#include <string>

#include "client/render/sweep_report.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

MergedMask Mask(int index, const std::string& id, int correct) {
  MergedMask m;
  m.counts.mask_index = index;
  m.counts.mask_id = id;
  m.counts.examples = 4;
  m.counts.scored = 4;
  m.counts.correct = correct;
  m.accuracy = correct / 4.0;
  return m;
}

// A sweep whose baseline gets nothing right: no relative change exists.
SweepReport ZeroBaseline() {
  SweepReport run;
  run.summary.baseline = Mask(-1, "baseline", 0);
  run.summary.masks = {Mask(0, "head-L0H0", 1)};
  run.summary.masks[0].accuracy_delta = 0.25;
  return run;
}

// --out-csv and --out-dir write one CSV: render::SweepResultsCsv of these
// results.
TEST(SweepOutputTest, NoRelativeChangeIsAnEmptyCsvField) {
  const std::string csv = render::SweepResultsCsv(
      ToSweepResults(ZeroBaseline().summary, "m", 1, 1));
  EXPECT_NE(csv.find("\n0,head-L0H0,,0,,4,4,1,0.25,0.25,,0,0,"),
            std::string::npos)
      << csv;
  EXPECT_EQ(csv.find("nan"), std::string::npos) << csv;
}

TEST(SweepOutputTest, NoRelativeChangeIsJsonNull) {
  SweepReport run = ZeroBaseline();
  nlohmann::json j = nlohmann::json::parse(SweepJson(run, "m", "zero"));
  EXPECT_TRUE(j["masks"][0]["relative_change_percent"].is_null()) << j;
  EXPECT_TRUE(j["baseline"]["relative_change_percent"].is_null()) << j;
  run.summary.masks[0].relative_change_percent = -12.5;
  j = nlohmann::json::parse(SweepJson(run, "m", "zero"));
  EXPECT_EQ(j["masks"][0]["relative_change_percent"], -12.5);
}

TEST(SweepOutputTest, ResultsCarryNaNAndScaledHeads) {
  SweepReport run = ZeroBaseline();
  run.summary.masks[0].counts.ablated = {{0, 0}, {1, 1}};
  run.summary.masks[0].scaled = {{1, 1}};
  const render::SweepResults r = ToSweepResults(run.summary, "m", 2, 2);
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_TRUE(std::isnan(r.results[0].relative_change_percent));
  ASSERT_EQ(r.results[0].scaled.size(), 1u);
  EXPECT_EQ(r.results[0].scaled[0].layer, 1);
  EXPECT_EQ(r.results[0].scaled[0].head, 1);
}

}  // namespace
}  // namespace client
}  // namespace bertology
