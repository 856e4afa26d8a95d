#include "client/render/difference_map_figure.h"

#include <gtest/gtest.h>

#include <string>

#include "client/render/svg_test_util.h"

namespace bertology::render {
namespace {

using testing::FindAll;
using testing::ParseHexColor;
using testing::ParseXml;

TEST(DifferenceMapSvg, OneCellPerPairDivergingColoursAndLabels) {
  DifferenceMap map;
  map.title = "L2 H1: b - a";
  map.subtitle = "a & b";
  map.tokens = {"[CLS]", "<x>", "[SEP]"};
  map.values = {0.5, 0, -0.25, 0, 0, 0, -0.5, 0.1, 0};
  auto doc = ParseXml(DifferenceMapSvg(map));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto cells = FindAll(**doc, "rect", "cell");
  ASSERT_EQ(cells.size(), 9u);
  for (size_t k = 0; k < cells.size(); ++k) {
    EXPECT_EQ(cells[k]->Attr("data-row"), std::to_string(k / 3));
    EXPECT_EQ(cells[k]->Attr("data-col"), std::to_string(k % 3));
  }
  // +0.5 (the largest |value|) is red, -0.5 blue, 0 white.
  const auto pos = ParseHexColor(cells[0]->Attr("fill"));
  const auto neg = ParseHexColor(cells[6]->Attr("fill"));
  const auto zero = ParseHexColor(cells[1]->Attr("fill"));
  EXPECT_GT(pos.r, pos.b + 50);
  EXPECT_GT(neg.b, neg.r + 50);
  EXPECT_GT(zero.r, 240);
  EXPECT_GT(zero.g, 240);
  EXPECT_GT(zero.b, 240);
  // A smaller difference is paler than the largest one.
  const auto small = ParseHexColor(cells[7]->Attr("fill"));
  EXPECT_GT(small.g, pos.g);
  EXPECT_EQ(std::stod(cells[2]->Attr("data-value")), -0.25);
  ASSERT_EQ(FindAll(**doc, "text", "row-label").size(), 3u);
  ASSERT_EQ(FindAll(**doc, "text", "col-label").size(), 3u);
  EXPECT_EQ(FindAll(**doc, "text", "row-label")[1]->AllText(), "<x>");
  EXPECT_EQ(FindAll(**doc, "rect", "legend").size(), 1u);
  EXPECT_NE((*doc)->AllText().find("a & b"), std::string::npos);
}

TEST(DifferenceMapSvg, AllZeroDifferenceIsWhite) {
  DifferenceMap map;
  map.tokens = {"a", "b"};
  map.values = {0, 0, 0, 0};
  auto doc = ParseXml(DifferenceMapSvg(map));
  ASSERT_TRUE(doc.ok()) << doc.status();
  for (const auto* cell : FindAll(**doc, "rect", "cell")) {
    EXPECT_EQ(ParseHexColor(cell->Attr("fill")).g, ParseHexColor("#ffffff").g);
  }
}

}  // namespace
}  // namespace bertology::render
