#include "client/cli/sweep_summary.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

render::MaskOutcome Outcome(const std::string& id,
                            std::vector<render::HeadIndex> ablated,
                            int correct) {
  render::MaskOutcome m;
  m.mask_id = id;
  m.ablated = std::move(ablated);
  m.examples = 10;
  m.correct = correct;
  m.accuracy = correct / 10.0;
  m.relative_change_percent = (m.accuracy / 0.5 - 1) * 100;
  return m;
}

// 2 layers x 2 heads; baseline 5/10.
render::SweepResults Sweep() {
  render::SweepResults s;
  s.model = "tiny";
  s.num_layers = 2;
  s.num_heads = 2;
  s.baseline = Outcome("baseline", {}, 5);
  s.results = {Outcome("head-L0H0", {{0, 0}}, 2),
               Outcome("head-L0H1", {{0, 1}}, 5),
               Outcome("head-L1H0", {{1, 0}}, 6),
               Outcome("head-L1H1", {{1, 1}}, 4),
               Outcome("layer-0", {{0, 0}, {0, 1}}, 1),
               Outcome("layer-1", {{1, 0}, {1, 1}}, 5),
               Outcome("random-L0-2-k2-s1-r0", {{0, 1}, {1, 0}}, 4),
               Outcome("random-L0-2-k2-s1-r1", {{0, 0}, {1, 1}}, 2),
               Outcome("mask-8", {{0, 0}, {0, 1}, {1, 0}}, 3)};
  return s;
}

TEST(SweepSummaryTable, ShowsEverySection) {
  const std::string t = SweepSummaryTable(Sweep(), "zero");
  EXPECT_TRUE(Has(t, "Sweep of tiny (zero ablation): 9 masks")) << t;
  EXPECT_TRUE(Has(t, "Baseline accuracy (no mask): 50.00% (5/10")) << t;
  // Harmful: L0H0 (-60%) before L1H1 (-20%); L0H1 (0%) is in neither list.
  EXPECT_TRUE(Has(t, "L0H0 ")) << t;
  EXPECT_LT(t.find("L0H0 "), t.find("L1H1 "));
  EXPECT_TRUE(Has(t, "-60.0%")) << t;
  EXPECT_FALSE(Has(t, "L0H1 ")) << t;
  EXPECT_TRUE(Has(t, "+20.0%")) << t;  // L1H0, helpful
  EXPECT_TRUE(Has(t, "Whole layers masked")) << t;
  EXPECT_TRUE(Has(t, "-80.0%")) << t;  // layer 0
  // Random: mean of 40% and 20% = 30%, -40%.
  EXPECT_TRUE(Has(t, "all layers")) << t;
  EXPECT_TRUE(Has(t, " 30.00%")) << t;
  EXPECT_TRUE(Has(t, "-40.0%")) << t;
  EXPECT_TRUE(Has(t, "mask-8")) << t;
}

TEST(SweepSummaryTable, SaysWhenNoHeadHelps) {
  render::SweepResults s = Sweep();
  s.results.erase(s.results.begin() + 2);  // drop the helpful L1H0
  const std::string t = SweepSummaryTable(s, "uniform");
  EXPECT_TRUE(Has(t, "none: no single head raises accuracy")) << t;
}

TEST(SweepSummaryTable, ZeroBaselineIsNotANumber) {
  render::SweepResults s = Sweep();
  s.baseline.accuracy = 0;
  for (auto& r : s.results) r.relative_change_percent = NAN;
  const std::string t = SweepSummaryTable(s, "zero");
  EXPECT_TRUE(Has(t, "n/a")) << t;
  EXPECT_TRUE(Has(t, "none: no single head lowers accuracy")) << t;
  // No relative change is not "no change".
  EXPECT_TRUE(Has(t, "0 change nothing, 4 n/a (baseline accuracy 0)")) << t;
}

TEST(SweepSummaryTable, AScaledHeadIsNotASingleHeadMasked) {
  render::SweepResults s = Sweep();
  // A dense mask: L0H1 at 0.5 (the server lists it among `ablated`).
  render::MaskOutcome half = Outcome("half", {{0, 1}}, 5);
  half.scaled = {{0, 1}};
  // A dense mask zeroing L1H0 and scaling L1H1: not "layer 1 masked".
  render::MaskOutcome mixed = Outcome("mixed", {{1, 0}, {1, 1}}, 5);
  mixed.scaled = {{1, 1}};
  s.results.push_back(half);
  s.results.push_back(mixed);
  const std::string t = SweepSummaryTable(s, "zero");
  EXPECT_TRUE(Has(t, "Single heads: 4 masked one at a time")) << t;
  // Listed with the other masks: nothing zeroed and one head scaled, one
  // zeroed and one scaled.
  EXPECT_TRUE(Has(t, "half                             0       1")) << t;
  EXPECT_TRUE(Has(t, "mixed                            1       1")) << t;
  EXPECT_TRUE(Has(t, "mask-8                           3       0")) << t;
}

}  // namespace
}  // namespace client
}  // namespace bertology
