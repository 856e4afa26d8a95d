#include "client/render/segmentation_figure.h"

#include <string>

#include "absl/strings/match.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

TEST(SegmentationSvg, CharactersAndBoundaries) {
  SegmentationFigure f;
  f.title = "head 2:3 <&>";
  f.characters = {"\u4e00", "\u4e01", "<", "\u4e03"};
  f.segment = {0, 0, 0, 1};
  f.gold_end = {false, true, true, true};
  f.predicted = {"end", "end", "internal", "none"};
  const std::string svg = SegmentationSvg(f);
  auto root = testing::ParseXml(svg);
  ASSERT_TRUE(root.ok()) << root.status() << "\n" << svg;
  const auto chars = testing::FindAll(**root, "rect", "char");
  ASSERT_EQ(chars.size(), 4u);
  EXPECT_EQ(chars[1]->Attr("data-gold-end"), "1");
  EXPECT_EQ(chars[2]->Attr("data-predicted"), "internal");
  const auto gold = testing::FindAll(**root, "line", "gold-boundary");
  ASSERT_EQ(gold.size(), 3u);
  EXPECT_EQ(gold[0]->Attr("data-index"), "1");
  const auto predicted = testing::FindAll(**root, "line", "predicted-boundary");
  ASSERT_EQ(predicted.size(), 2u);
  EXPECT_EQ(predicted[0]->Attr("stroke"), "#d62728");  // not a gold end
  EXPECT_EQ(predicted[1]->Attr("stroke"), "#2ca02c");
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), "head 2:3 <&>"));
  // The segment gap: text_b's box starts further right than one cell.
  EXPECT_GT(std::stod(chars[3]->Attr("x")) - std::stod(chars[2]->Attr("x")),
            26.5);
}

}  // namespace
}  // namespace bertology::render
