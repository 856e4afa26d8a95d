#include "client/render/head_grid_figures.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

TEST(HeadGridSvg, OneCellPerHeadWithValues) {
  HeadGrid g;
  g.title = "to [CLS] <&>";
  g.num_layers = 2;
  g.num_heads = 3;
  g.values = {0.0, 0.5, 1.0, NAN, 0.25, 0.75};
  const std::string svg = HeadGridSvg(g);
  auto root = testing::ParseXml(svg);
  ASSERT_TRUE(root.ok()) << root.status() << "\n" << svg;
  const auto cells = testing::FindAll(**root, "rect", "cell");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[5]->Attr("data-layer"), "1");
  EXPECT_EQ(cells[5]->Attr("data-head"), "2");
  EXPECT_EQ(cells[5]->Attr("data-value"), "0.750000");
  EXPECT_EQ(cells[3]->Attr("data-value"), "");   // NaN
  EXPECT_EQ(cells[0]->Attr("fill"), "#ffffff");  // 0 is white
  // The largest value is the darkest.
  const auto dark = testing::ParseHexColor(cells[2]->Attr("fill"));
  const auto mid = testing::ParseHexColor(cells[1]->Attr("fill"));
  EXPECT_LT(dark.r + dark.g + dark.b, mid.r + mid.g + mid.b);
  EXPECT_EQ(testing::FindAll(**root, "rect", "legend").size(), 1u);
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), "to [CLS] <&>"));
  EXPECT_FALSE(absl::StrContains(svg, "nan"));
}

TEST(PatternGridSvg, CellsAndLegend) {
  const std::vector<std::string> names = {"vertical", "block", "bogus",
                                          "diagonal"};
  const std::string svg = PatternGridSvg("tiny", 2, 2, names);
  auto root = testing::ParseXml(svg);
  ASSERT_TRUE(root.ok()) << root.status();
  const auto cells = testing::FindAll(**root, "rect", "pattern");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[1]->Attr("data-pattern"), "block");
  EXPECT_NE(cells[0]->Attr("fill"), cells[1]->Attr("fill"));
  EXPECT_EQ(cells[2]->Attr("fill"), "#d9d9d9");  // unknown: grey
  const auto swatches = testing::FindAll(**root, "rect", "legend-swatch");
  ASSERT_EQ(swatches.size(), PatternNames().size());
  for (size_t i = 0; i < swatches.size(); ++i) {
    EXPECT_EQ(swatches[i]->Attr("data-pattern"), PatternNames()[i]);
  }
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), "vertical+diagonal"));
}

}  // namespace
}  // namespace bertology::render
