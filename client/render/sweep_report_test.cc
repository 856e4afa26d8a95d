#include "client/render/sweep_report.h"

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace bertology::render {
namespace {

SweepResults Example() {
  SweepResults s;
  s.model = "m";
  s.num_layers = 2;
  s.num_heads = 2;
  s.baseline.mask_index = -1;
  s.baseline.mask_id = "baseline";
  s.baseline.examples = 3;
  s.baseline.scored = 3;
  s.baseline.correct = 2;
  s.baseline.accuracy = 2.0 / 3;
  MaskOutcome b;
  b.mask_index = 1;
  b.mask_id = "keep, \"quoted\"";
  b.spec = "line\nbreak";
  b.ablated = {{0, 1}, {1, 0}};
  b.examples = 3;
  b.scored = 3;
  b.correct = 1;
  b.accuracy = 1.0 / 3;
  b.relative_change_percent = -50;
  b.mean_loss_delta = NAN;
  MaskOutcome a;
  a.mask_index = 0;
  a.mask_id = "head-L0H0";
  a.ablated = {{0, 0}};
  a.accuracy = 0.1 + 0.2;  // not exactly representable in few digits
  s.results = {b, a};
  return s;
}

TEST(SweepResultsCsv, HeaderBaselineFirstSortedAndQuoted) {
  const std::string csv = SweepResultsCsv(Example());
  EXPECT_TRUE(absl::StartsWith(
      csv,
      "mask_index,mask_id,spec,num_ablated,ablated,examples,scored,correct,"
      "accuracy,accuracy_delta,relative_change_percent,loss_sum,"
      "mean_loss_delta,accuracy_ci_low,accuracy_ci_high,delta_ci_low,"
      "delta_ci_high,distinguishable,draws,draw_accuracy_std\n"
      "-1,baseline,,0,,3,3,2,0.66666666666666663,"));
  EXPECT_TRUE(absl::StrContains(csv,
                                "\n0,head-L0H0,,1,L0H0,0,0,0,"
                                "0.30000000000000004,"));
  EXPECT_TRUE(absl::StrContains(
      csv, "\n1,\"keep, \"\"quoted\"\"\",\"line\nbreak\",2,L0H1;L1H0,3,3,1,"));
  // NaN: no value (the loss delta, and intervals that were not set).
  EXPECT_TRUE(absl::StrContains(csv, ",-50,0,,,,,,,1,0\n"));
  EXPECT_FALSE(absl::StrContains(csv, "nan"));
  EXPECT_LT(csv.find("\n0,head"), csv.find("\n1,\"keep"));
}

TEST(SweepResultsJson, WritesNaNAsNullAndExactNumbers) {
  const SweepResults s = Example();
  const std::string json = SweepResultsJson(s);
  const auto doc = nlohmann::json::parse(json);
  EXPECT_TRUE(doc["results"][0]["mean_loss_delta"].is_null());
  EXPECT_EQ(doc["results"][0]["ablated"],
            nlohmann::json::parse("[[0,1],[1,0]]"));
  EXPECT_EQ(doc["num_layers"], 2);
  EXPECT_EQ(doc["model"], "m");
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["mask_id"], s.results[0].mask_id);
  EXPECT_EQ(doc["results"][0]["spec"], "line\nbreak");
  // Doubles are written so that they read back exactly.
  EXPECT_EQ(doc["results"][1]["accuracy"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(doc["baseline"]["correct"], 2);
}

TEST(WriteSweepReport, WritesCsvAndJson) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "sweep_report_test")
          .string();
  std::vector<std::string> written;
  ASSERT_TRUE(WriteSweepReport(Example(), dir, "r", &written).ok());
  ASSERT_EQ(written.size(), 2u);
  EXPECT_TRUE(absl::EndsWith(written[0], "r.csv"));
  EXPECT_TRUE(absl::EndsWith(written[1], "r.json"));
  EXPECT_TRUE(std::filesystem::exists(written[1]));
}

}  // namespace
}  // namespace bertology::render
