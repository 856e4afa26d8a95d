#include "client/render/attribution_heatmap.h"

#include <cmath>
#include <string>

#include "absl/strings/match.h"
#include "client/render/color_scale.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

using testing::FindAll;
using testing::ParseXml;
using testing::XmlNode;

constexpr char kEvil[] = "</td><b>&\"'";

// Two inputs; the second has a signed row with a NaN and an evil unit.
AttributionPage Example() {
  AttributionPage page;
  page.title = "tiny <model>";
  page.subtitle = "logit of the predicted class";
  AttributionPanel a;
  a.title = "input 0: the cat";
  a.units = {"[CLS]", "the", "cat", "[SEP]"};
  a.segments = {0, 0, 0, 0};
  a.rows = {{"saliency", false, {0.5, 1.0, 2.0, 0.0}},
            {"integrated-gradients", true, {0.0, -1.0, 0.5, 0.0}}};
  AttributionPanel b;
  b.title = "input 1";
  b.subtitle = "gap 0.01";
  b.units = {"[CLS]", kEvil, "[SEP]"};
  b.rows = {{"gradient-x-input", true, {0.25, NAN, -0.5}},
            {"rollout", false, {0.0, 0.0, 0.0}}};
  page.panels = {a, b};
  return page;
}

TEST(AttributionHeatmapHtml, OneTableRowPerMethodAndCellPerUnit) {
  absl::StatusOr<std::string> html = AttributionHeatmapHtml(Example());
  ASSERT_TRUE(html.ok()) << html.status();
  auto doc = ParseXml(*html);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto tables = FindAll(**doc, "table", "attribution");
  ASSERT_EQ(tables.size(), 2u);
  const auto rows = FindAll(*tables[0], "tr", "method-row");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]->Attr("data-method"), "integrated-gradients");
  EXPECT_EQ(FindAll(*rows[0], "td", "cell").size(), 4u);
  EXPECT_EQ(FindAll(*tables[0], "th", "unit").size(), 4u);
  // The evil unit is text, not markup.
  const auto units = FindAll(*tables[1], "th", "unit");
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[1]->AllText(), kEvil);
}

TEST(AttributionHeatmapHtml, CellsScaleByTheirRowsMaximum) {
  absl::StatusOr<std::string> html = AttributionHeatmapHtml(Example());
  ASSERT_TRUE(html.ok()) << html.status();
  auto doc = ParseXml(*html);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto tables = FindAll(**doc, "table", "attribution");
  const auto rows = FindAll(*tables[0], "tr", "method-row");
  const auto sal = FindAll(*rows[0], "td", "cell");
  EXPECT_EQ(sal[2]->Attr("data-scaled"), "1.0000");  // 2.0 is the max
  EXPECT_EQ(sal[0]->Attr("data-scaled"), "0.2500");
  EXPECT_TRUE(absl::StrContains(sal[2]->Attr("style"), DivergingColor(1, 1)));
  const auto ig = FindAll(*rows[1], "td", "cell");
  EXPECT_EQ(ig[1]->Attr("data-scaled"), "-1.0000");  // |-1| is the max
  EXPECT_TRUE(absl::StrContains(ig[1]->Attr("style"), DivergingColor(-1, 1)));
  EXPECT_EQ(ig[1]->Attr("data-value"), "-1");
  EXPECT_TRUE(absl::StrContains(ig[2]->Attr("title"), "0.5"));
  // NaN: grey, no value; an all-zero row: white, scaled 0.
  const auto second = FindAll(*tables[1], "tr", "method-row");
  const auto gxi = FindAll(*second[0], "td", "cell");
  EXPECT_EQ(gxi[1]->Attr("data-value"), "");
  EXPECT_TRUE(absl::StrContains(gxi[1]->Attr("style"), kMissingColor));
  EXPECT_TRUE(absl::StrContains(gxi[1]->Attr("title"), "n/a"));
  const auto zero = FindAll(*second[1], "td", "cell");
  EXPECT_EQ(zero[0]->Attr("data-scaled"), "0.0000");
  EXPECT_TRUE(absl::StrContains(zero[0]->Attr("style"), "#ffffff"));
}

TEST(AttributionHeatmapHtml, SpecialTokensLeftOutOfTheScale) {
  AttributionPage page;
  AttributionPanel p;
  p.units = {"[CLS]", "the", "cat", "[SEP]"};
  p.special = {true, false, false, true};
  // Rollout-like: [CLS] holds most of the mass.
  p.rows = {{"rollout", false, {0.8, 0.05, 0.1, 0.05}}};
  page.panels = {p};
  absl::StatusOr<std::string> html = AttributionHeatmapHtml(page);
  ASSERT_TRUE(html.ok()) << html.status();
  auto doc = ParseXml(*html);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto cells = FindAll(**doc, "td", "cell");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[2]->Attr("data-scaled"), "1.0000");  // the text's max
  EXPECT_EQ(cells[1]->Attr("data-scaled"), "0.5000");
  EXPECT_EQ(cells[0]->Attr("data-scaled"), "1.0000");  // clipped
  EXPECT_EQ(cells[0]->Attr("data-value"), "0.80000000000000004");
  // Only special units: they make the scale.
  page.panels[0].rows = {{"rollout", false, {0.8, 0, 0, 0.2}}};
  html = AttributionHeatmapHtml(page);
  ASSERT_TRUE(html.ok());
  doc = ParseXml(*html);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(FindAll(**doc, "td", "cell")[3]->Attr("data-scaled"), "0.2500");
  page.panels[0].special = {true};
  EXPECT_FALSE(AttributionHeatmapHtml(page).ok());
}

TEST(AttributionHeatmapHtml, SelfContained) {
  absl::StatusOr<std::string> html = AttributionHeatmapHtml(Example());
  ASSERT_TRUE(html.ok());
  for (const char* fetch : {"src=", "href=", "@import", "<script"}) {
    EXPECT_FALSE(absl::StrContains(*html, fetch)) << fetch;
  }
  EXPECT_TRUE(absl::StrContains(*html, "tiny &lt;model&gt;"));
}

TEST(AttributionHeatmapHtml, RefusesMismatchedRows) {
  AttributionPage page = Example();
  page.panels[1].rows[0].scores.pop_back();
  EXPECT_FALSE(AttributionHeatmapHtml(page).ok());
  page = Example();
  page.panels[0].segments.pop_back();
  EXPECT_FALSE(AttributionHeatmapHtml(page).ok());
}

}  // namespace
}  // namespace bertology::render
