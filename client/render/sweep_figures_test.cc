#include "client/render/sweep_figures.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/render/mask_groups.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

using testing::FindAll;
using testing::ParseHexColor;
using testing::ParseXml;
using testing::XmlNode;

constexpr int kLayers = 4, kHeads = 3;

MaskOutcome Mask(std::string id, std::vector<HeadIndex> ablated, double acc,
                 double base = 0.8) {
  MaskOutcome r;
  r.mask_id = std::move(id);
  r.ablated = std::move(ablated);
  r.accuracy = acc;
  r.examples = 100;
  r.correct = static_cast<int64_t>(std::lround(acc * 100));
  r.accuracy_delta = acc - base;
  r.relative_change_percent = (acc / base - 1) * 100;
  return r;
}

// 4 x 3 heads: single heads (L0H0 missing, L3H2 NaN), all layers, and
// random masks over the low and high halves with 2 repeats each.
SweepResults Example() {
  SweepResults s;
  s.model = "tiny <&> \"model\"";
  s.num_layers = kLayers;
  s.num_heads = kHeads;
  s.baseline = Mask("baseline", {}, 0.8);
  s.baseline.mask_index = -1;
  int index = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (int h = 0; h < kHeads; ++h) {
      if (l == 0 && h == 0) continue;
      MaskOutcome r = Mask(absl::StrCat("head-L", l, "H", h), {{l, h}},
                           0.8 + 0.02 * (h - 1) * (l + 1));
      if (l == 3 && h == 2) r.relative_change_percent = NAN;
      r.mask_index = index++;
      s.results.push_back(r);
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    MaskOutcome r = Mask(absl::StrCat("layer-", l), {{l, 2}, {l, 0}, {l, 1}},
                         l == 2 ? 0.84 : 0.6);
    r.mask_index = index++;
    s.results.push_back(r);
  }
  for (int rep = 0; rep < 2; ++rep) {
    s.results.push_back(Mask(absl::StrCat("random-0.50-L0-2-r", rep),
                             {{0, rep}, {1, 2}, {1, rep}}, 0.5 + 0.1 * rep));
    s.results.push_back(Mask(absl::StrCat("random-0.50-L2-4-r", rep),
                             {{2, rep}, {3, 2}, {3, 0}}, 0.78));
    s.results.push_back(
        Mask(absl::StrCat("random-0.17-L2-4-r", rep), {{2, rep}}, 0.79));
  }
  return s;
}

std::unique_ptr<XmlNode> Parse(const std::string& svg) {
  auto root = ParseXml(svg);
  EXPECT_TRUE(root.ok()) << root.status() << "\n" << svg;
  if (!root.ok()) return std::make_unique<XmlNode>();
  EXPECT_EQ((*root)->name, "svg");
  return *std::move(root);
}

const XmlNode* CellAt(const std::vector<const XmlNode*>& cells, int l, int h) {
  for (const XmlNode* c : cells) {
    if (c->Attr("data-layer") == std::to_string(l) &&
        c->Attr("data-head") == std::to_string(h)) {
      return c;
    }
  }
  return nullptr;
}

TEST(HeadHeatmapSvg, OneCellPerHeadWithValuesAndDivergingColours) {
  auto root = Parse(HeadHeatmapSvg(Example()));
  const auto cells = FindAll(*root, "rect", "cell");
  ASSERT_EQ(cells.size(), static_cast<size_t>(kLayers * kHeads));
  const std::string text = root->AllText();
  // Escaped model name reads back as written.
  EXPECT_TRUE(absl::StrContains(text, "tiny <&> \"model\"")) << text;
  EXPECT_TRUE(absl::StrContains(text, "baseline accuracy 80.00%"));

  // L3H0: acc 0.8 - 0.02*4 = 0.72 -> -10%; L3H1: 0%; L2H2: +7.5%.
  const XmlNode* neg = CellAt(cells, 3, 0);
  const XmlNode* zero = CellAt(cells, 3, 1);
  const XmlNode* pos = CellAt(cells, 2, 2);
  ASSERT_TRUE(neg && zero && pos);
  auto blue = ParseHexColor(neg->Attr("fill"));
  EXPECT_GT(blue.b, blue.r + 60) << neg->Attr("fill");
  auto red = ParseHexColor(pos->Attr("fill"));
  EXPECT_GT(red.r, red.b + 60) << pos->Attr("fill");
  EXPECT_EQ(zero->Attr("fill"), "#ffffff");
  EXPECT_TRUE(absl::StrContains(text, "-10.0"));
  EXPECT_TRUE(absl::StrContains(text, "7.5"));
  EXPECT_TRUE(absl::StrContains(neg->AllText(), "L3H0: -10.0%"));

  // The missing (L0H0) and NaN (L3H2) cells are grey "n/a".
  for (const XmlNode* c : {CellAt(cells, 0, 0), CellAt(cells, 3, 2)}) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->Attr("fill"), "#d9d9d9");
    EXPECT_TRUE(absl::StrContains(c->AllText(), "n/a"));
  }
  // Axis labels and the legend.
  EXPECT_TRUE(absl::StrContains(text, "layer"));
  EXPECT_TRUE(absl::StrContains(text, "H2"));
  EXPECT_TRUE(absl::StrContains(text, "L3"));
  EXPECT_EQ(FindAll(*root, "rect", "legend").size(), 1u);
  EXPECT_EQ(FindAll(*root, "stop").size(), 11u);
}

TEST(LayerBarsSvg, OneBarPerLayerSignedAroundZero) {
  auto root = Parse(LayerBarsSvg(Example()));
  const auto bars = FindAll(*root, "rect", "bar");
  ASSERT_EQ(bars.size(), static_cast<size_t>(kLayers));
  // Layer 2 gains 5% (red, above zero), the others lose 25% (blue, below).
  double zero_y = -1;
  for (const XmlNode* line : FindAll(*root, "line", "grid")) {
    if (line->Attr("stroke") == "#000000") zero_y = std::stod(line->Attr("y1"));
  }
  ASSERT_GE(zero_y, 0);
  for (const XmlNode* bar : bars) {
    const double y = std::stod(bar->Attr("y"));
    const double h = std::stod(bar->Attr("height"));
    const auto c = ParseHexColor(bar->Attr("fill"));
    if (bar->Attr("data-layer") == "2") {
      EXPECT_NEAR(y + h, zero_y, 0.2);
      EXPECT_GT(c.r, c.b);
    } else {
      EXPECT_NEAR(y, zero_y, 0.2);
      EXPECT_GT(c.b, c.r);
    }
  }
  const std::string text = root->AllText();
  EXPECT_TRUE(absl::StrContains(text, "5.0"));
  EXPECT_TRUE(absl::StrContains(text, "-25.0"));
}

TEST(FractionCurveSvg, LowAndHighSeriesWithRanges) {
  const auto series = RandomSeries(Example());
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].label, "layers 0-1");
  EXPECT_EQ(series[1].label, "layers 2-3");
  ASSERT_EQ(series[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(series[0].points[0].fraction, 0.5);
  EXPECT_NEAR(series[0].points[0].mean_accuracy, 0.55, 1e-12);
  EXPECT_NEAR(series[0].points[0].min_accuracy, 0.5, 1e-12);
  EXPECT_NEAR(series[0].points[0].max_accuracy, 0.6, 1e-12);
  EXPECT_EQ(series[0].points[0].repeats, 2);
  ASSERT_EQ(series[1].points.size(), 2u);
  EXPECT_NEAR(series[1].points[0].fraction, 1.0 / 6, 1e-12);

  auto root = Parse(FractionCurveSvg(Example()));
  EXPECT_EQ(FindAll(*root, "polyline", "series").size(), 2u);
  EXPECT_EQ(FindAll(*root, "circle", "point").size(), 3u);
  EXPECT_EQ(FindAll(*root, "line", "range").size(), 3u);
  EXPECT_EQ(FindAll(*root, "line", "baseline").size(), 1u);
  const std::string text = root->AllText();
  EXPECT_TRUE(absl::StrContains(text, "layers 0-1"));
  EXPECT_TRUE(absl::StrContains(text, "layers 2-3"));
}

TEST(SweepFigures, EmptyAndNaNSweepsStillRender) {
  SweepResults s;
  s.num_layers = 2;
  s.num_heads = 2;
  s.baseline.accuracy = NAN;
  s.results.push_back(Mask("head-L0H0", {{0, 0}}, NAN));
  s.results.back().relative_change_percent = NAN;
  s.results.push_back(Mask("layer-1", {{1, 0}, {1, 1}}, NAN));
  s.results.back().relative_change_percent =
      std::numeric_limits<double>::infinity();
  s.results.push_back(Mask("random-0.50-r0", {{0, 1}, {1, 1}}, NAN));
  for (const std::string& svg :
       {HeadHeatmapSvg(s), LayerBarsSvg(s), FractionCurveSvg(s)}) {
    auto root = Parse(svg);
    EXPECT_FALSE(absl::StrContains(svg, "nan")) << svg;
    EXPECT_FALSE(absl::StrContains(svg, "inf")) << svg;
  }
  EXPECT_EQ(FindAll(*Parse(HeadHeatmapSvg(s)), "rect", "cell").size(), 4u);
  EXPECT_TRUE(
      absl::StrContains(Parse(FractionCurveSvg(s))->AllText(), "no data"));
}

TEST(WriteSweepFigures, WritesOnlyFiguresWithData) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "sweep_figures_test")
          .string();
  std::filesystem::remove_all(dir);
  std::vector<std::string> written;
  ASSERT_TRUE(WriteSweepFigures(Example(), dir, &written).ok());
  ASSERT_EQ(written.size(), 3u);
  for (const std::string& path : written) {
    EXPECT_GT(std::filesystem::file_size(path), 500u) << path;
  }
  SweepResults baseline_only;
  baseline_only.num_layers = 2;
  baseline_only.num_heads = 2;
  written.clear();
  ASSERT_TRUE(WriteSweepFigures(baseline_only, dir + "/b", &written).ok());
  EXPECT_TRUE(written.empty());
}

}  // namespace
}  // namespace bertology::render
