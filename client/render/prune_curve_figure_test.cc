#include "client/render/prune_curve_figure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "client/render/svg_test_util.h"

namespace bertology::render {
namespace {

using testing::FindAll;
using testing::ParseXml;

std::vector<PrunePoint> Steps() {
  return {{0, 12, 0.80}, {1, 9, 0.78}, {2, 6, 0.74}, {3, 3, 0.60}};
}

TEST(PruneCurveSvg, OnePointPerStepLeftToRightAndTheKeptOneMarked) {
  auto doc = ParseXml(PruneCurveSvg("tiny & co", 12, Steps(), 0.72, 2));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto points = FindAll(**doc, "circle", "point");
  ASSERT_EQ(points.size(), 4u);
  double previous_x = -1;
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i]->Attr("data-step"), std::to_string(i));
    const double x = std::stod(points[i]->Attr("cx"));
    EXPECT_GT(x, previous_x);  // fewer heads left: further right
    previous_x = x;
  }
  // Higher accuracy is drawn higher (smaller y).
  EXPECT_LT(std::stod(points[0]->Attr("cy")), std::stod(points[3]->Attr("cy")));
  const auto kept = FindAll(**doc, "circle", "kept");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0]->Attr("data-step"), "2");
  const auto threshold = FindAll(**doc, "line", "threshold");
  ASSERT_EQ(threshold.size(), 1u);
  // The threshold (0.72) lies between the kept step (0.74) and the next.
  const double y = std::stod(threshold[0]->Attr("y1"));
  EXPECT_GT(y, std::stod(points[2]->Attr("cy")));
  EXPECT_LT(y, std::stod(points[3]->Attr("cy")));
  EXPECT_NE((*doc)->AllText().find("tiny & co"), std::string::npos);
}

TEST(PruneCurveSvg, NoThresholdNoLine) {
  auto doc = ParseXml(PruneCurveSvg("", 12, Steps(), NAN, 0));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_TRUE(FindAll(**doc, "line", "threshold").empty());
  EXPECT_EQ(FindAll(**doc, "circle", "point").size(), 4u);
}

}  // namespace
}  // namespace bertology::render
