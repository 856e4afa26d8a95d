#include "client/render/patch_figure.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

TEST(PatchGridSvg, OneCellPerSiteOnADivergingScale) {
  PatchGrid g;
  g.title = "Activation patching <clean>";
  g.row_axis = "layer";
  g.col_axis = "head";
  g.row_labels = {"L0", "L1"};
  g.col_labels = {"H0", "H1", "H2"};
  g.values = {0.0, 1.0, -0.5, NAN, 0.25, 0.9};
  const std::string svg = PatchGridSvg(g);
  auto root = testing::ParseXml(svg);
  ASSERT_TRUE(root.ok()) << root.status() << "\n" << svg;
  const auto cells = testing::FindAll(**root, "rect", "cell");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[4]->Attr("data-row"), "1");
  EXPECT_EQ(cells[4]->Attr("data-col"), "1");
  EXPECT_EQ(cells[4]->Attr("data-value"), "0.250000");
  EXPECT_EQ(cells[3]->Attr("data-value"), "");  // NaN
  EXPECT_EQ(cells[3]->Attr("fill"), "#d9d9d9");
  EXPECT_EQ(cells[0]->Attr("fill"), "#ffffff");  // 0: no effect, white
  // A full restoration is red, a negative effect blue, and a larger
  // effect darker than a smaller one of the same sign.
  const auto full = testing::ParseHexColor(cells[1]->Attr("fill"));
  const auto neg = testing::ParseHexColor(cells[2]->Attr("fill"));
  const auto quarter = testing::ParseHexColor(cells[4]->Attr("fill"));
  EXPECT_GT(full.r, full.b);
  EXPECT_GT(neg.b, neg.r);
  EXPECT_NE(cells[1]->Attr("fill"), cells[5]->Attr("fill"));
  EXPECT_LT(full.g, quarter.g);
  EXPECT_EQ(testing::FindAll(**root, "rect", "legend").size(), 1u);
  EXPECT_EQ(testing::FindAll(**root, "text", "value").size(), 6u);
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), "Activation patching"));
  EXPECT_FALSE(absl::StrContains(svg, "nan"));
}

TEST(PatchGridSvg, ManyTokenColumnsAreCompactAndLabelled) {
  PatchGrid g;
  g.row_axis = "layer·head";
  g.col_axis = "token";
  g.row_labels = {"L0H0", "L0H1"};
  for (int c = 0; c < 20; ++c) g.col_labels.push_back(absl::StrCat("tok", c));
  g.col_labels[3] = "<&\"é>";
  g.values.assign(2 * 20, 0.1);
  g.values[5] = 2.0;  // beyond 1: the scale widens to it
  const std::string svg = PatchGridSvg(g);
  auto root = testing::ParseXml(svg);
  ASSERT_TRUE(root.ok()) << root.status() << "\n" << svg;
  const auto cells = testing::FindAll(**root, "rect", "cell");
  ASSERT_EQ(cells.size(), 40u);
  EXPECT_EQ(cells[25]->Attr("data-row"), "1");
  EXPECT_EQ(cells[25]->Attr("data-col"), "5");
  EXPECT_TRUE(testing::FindAll(**root, "text", "value").empty());
  const auto labels = testing::FindAll(**root, "text", "col-label");
  ASSERT_EQ(labels.size(), 20u);
  EXPECT_EQ(labels[3]->AllText(), "<&\"é>");
  EXPECT_TRUE(absl::StrContains(labels[3]->Attr("transform"), "rotate"));
  // The darkest cell is the largest; 0.1 of 2.0 is pale.
  const auto big = testing::ParseHexColor(cells[5]->Attr("fill"));
  const auto small = testing::ParseHexColor(cells[6]->Attr("fill"));
  EXPECT_LT(big.g, small.g);
  EXPECT_GT(small.g, 200);
}

}  // namespace
}  // namespace bertology::render
