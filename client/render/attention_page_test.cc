#include "client/render/attention_page.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/render/svg_test_util.h"
#include "gtest/gtest.h"

namespace bertology::render {
namespace {

constexpr char kEvil[] = "</script><b>&\"'";

// 5 tokens, maps for (0,0), (0,1), (1,0); the evil token is at index 2.
AttentionData Example() {
  AttentionData d;
  d.title = "pair <1>";
  d.prediction = "label \"relevant\" (p=0.91)";
  d.tokens = {"[CLS]", "hello", kEvil, "中文", "[SEP]"};
  d.segments = {0, 0, 0, 1, 1};
  const size_t t = d.tokens.size();
  for (auto [l, h] : {std::pair{0, 0}, {0, 1}, {1, 0}}) {
    HeadMap m{l, h, std::vector<float>(t * t, 0.0f)};
    for (size_t i = 0; i < t; ++i) m.weights[i * t + (i + h) % t] = 1.0f;
    d.maps.push_back(m);
  }
  d.maps[0].weights[0] = NAN;  // NaN-safe drawing (a diagonal 1)
  return d;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ValidateAttentionData, RejectsBadShapes) {
  AttentionData d = Example();
  EXPECT_TRUE(ValidateAttentionData(d).ok());
  d.maps[1].weights.pop_back();
  EXPECT_FALSE(ValidateAttentionData(d).ok());
  d = Example();
  d.maps[2].head = 1, d.maps[2].layer = 0;
  EXPECT_FALSE(ValidateAttentionData(d).ok());
  d = Example();
  d.segments.pop_back();
  EXPECT_FALSE(AttentionPageHtml(d).ok());
}

TEST(AttentionPageHtml, EmbedsDataWithoutBreakingOutOfTheScript) {
  auto html = AttentionPageHtml(Example());
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(Count(*html, "</script>"), 2u);  // our two script elements only
  EXPECT_EQ(Count(*html, "<script"), 2u);
  EXPECT_FALSE(absl::StrContains(*html, "<b>"));
  EXPECT_TRUE(absl::StrContains(
      *html, R"("\u003c/script\u003e\u003cb\u003e\u0026\"'")"));
  EXPECT_TRUE(absl::StrContains(*html, "<title>pair &lt;1&gt;</title>"));
  EXPECT_TRUE(absl::StrContains(*html, "label &quot;relevant&quot;"));
  EXPECT_FALSE(absl::StrContains(*html, "http://") &&
               !absl::StrContains(*html, "http://www.w3.org/2000/svg"));
  EXPECT_FALSE(absl::StrContains(*html, "https://"));
  EXPECT_FALSE(absl::StrContains(*html, "NaN"));
}

TEST(AttentionSvg, OneCellPerPairAndEscapedLabels) {
  const AttentionData d = Example();
  auto svg = AttentionSvg(d, d.maps[1]);
  ASSERT_TRUE(svg.ok()) << svg.status();
  auto root = testing::ParseXml(*svg);
  ASSERT_TRUE(root.ok()) << root.status() << "\n" << *svg;
  const auto cells = testing::FindAll(**root, "rect", "cell");
  ASSERT_EQ(cells.size(), 25u);
  // Row 0 attends to column 1 with weight 1: the darkest cell.
  EXPECT_EQ(cells[1]->Attr("fill"), "#053061");
  EXPECT_EQ(cells[0]->Attr("fill"), "#ffffff");
  EXPECT_EQ(testing::FindAll(**root, "text", "row-label").size(), 5u);
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), kEvil));
  EXPECT_TRUE(absl::StrContains((*root)->AllText(), "layer 0, head 1"));
  // NaN renders grey, not "nan".
  auto nan_svg = AttentionSvg(d, d.maps[0]);
  ASSERT_TRUE(nan_svg.ok());
  EXPECT_FALSE(absl::StrContains(*nan_svg, "nan"));
  EXPECT_TRUE(testing::ParseXml(*nan_svg).ok());
}

// Runs headless Chromium on the page and returns the DOM after its scripts
// ran (empty on failure).
std::string DumpDom(const std::string& html_path, const std::string& profile) {
  const std::string cmd = absl::StrCat(
      "timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu "
      "--disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=",
      profile, " --dump-dom file://", html_path, " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

TEST(AttentionPageHtml, RendersTokensInHeadlessChromium) {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    GTEST_SKIP() << "/usr/bin/chromium not installed";
  }
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "attention_page_test";
  std::filesystem::remove_all(dir);
  std::vector<std::string> written;
  ASSERT_TRUE(WriteAttentionFiles(Example(), dir.string(), &written).ok());
  ASSERT_EQ(written.size(), 4u);  // the page and 3 SVGs
  EXPECT_TRUE(absl::EndsWith(written[0], "attention.html"));
  EXPECT_TRUE(absl::EndsWith(written[3], "attention_L1_H0.svg"));

  const std::string dom =
      DumpDom(written[0], (dir / "chromium-profile").string());
  ASSERT_FALSE(dom.empty()) << "chromium produced no DOM";
  // The script ran to the end and drew layer 0, head 0.
  EXPECT_TRUE(absl::StrContains(dom, "data-rendered=\"L0H0\"")) << dom;
  // Both token columns, one <text> per token, drawn by the script.
  EXPECT_EQ(Count(dom, "class=\"token left"), 5u);
  EXPECT_EQ(Count(dom, "class=\"token right"), 5u);
  EXPECT_TRUE(absl::StrContains(dom, ">hello</text>"));
  EXPECT_TRUE(absl::StrContains(dom, ">中文</text>"));
  // The evil token is text, not markup.
  EXPECT_TRUE(
      absl::StrContains(dom, ">&lt;/script&gt;&lt;b&gt;&amp;\"'</text>"))
      << dom;
  EXPECT_FALSE(absl::StrContains(dom, "<b>"));
  // Selectors list the layers and the heads of layer 0; lines for weights.
  EXPECT_TRUE(absl::StrContains(dom, "<option value=\"1\">Layer 1</option>"));
  EXPECT_TRUE(absl::StrContains(dom, "<option value=\"1\">Head 1</option>"));
  EXPECT_EQ(Count(dom, "class=\"attn\""), 4u);  // 5 ones, one of them NaN
  EXPECT_EQ(Count(dom, "class=\"mcell\""), 25u);
}

}  // namespace
}  // namespace bertology::render
