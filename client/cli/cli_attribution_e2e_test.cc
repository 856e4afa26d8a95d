// End to end: `bertology attribute` and `bertology patch --method=
// attribution` (the real binary, from $BERTOLOGY_BIN_DIR) against the real
// bertology-server on the golden tiny checkpoint (3 layers x 4 heads,
// labels negative/neutral/positive): the files --out-dir writes agree with
// each other, and heatmap.html lays out in headless Chromium as
// tests/demo/test_demo.py checks the demo's figures. The numbers
// themselves are the server's tests' (tests/python/test_attribution.py).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cli_process.h"
#include "tests/integration/golden_server_cli_test.h"
#include "tests/integration/server_process.h"

namespace bertology {
namespace client {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::Contains;
using testing::Describe;
using testing::ReadFile;
using testing::RunCli;

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr int kMethods = 6;

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// One RFC 4180 record of a line (no newline inside a field here: the
// units are word pieces).
std::vector<std::string> CsvRecord(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::vector<std::vector<std::string>> CsvRows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    rows.push_back(CsvRecord(std::string(line)));
  }
  return rows;
}

class CliAttributionE2eTest : public testing::GoldenServerCliTest {
 protected:
  static CliResult Run(const std::string& command,
                       std::vector<std::string> args) {
    return GoldenServerCliTest::Run(command, std::move(args),
                                    absl::Seconds(240));
  }

  // Two inputs, a pair and a single text with a comma and quotes (CSV
  // quoting), as a headerless TSV.
  fs::path WriteInputs() const {
    const fs::path path = dir_ / "inputs.tsv";
    std::ofstream out(path);
    out << "the cat was here\tit is not\n"
        << "she said, \"no\"\t\n";
    return path;
  }
};

// The three files of --out-dir: CSV rows = inputs x units x methods, each
// score and each integrated-gradients gap the JSON's, one heatmap row per
// method and input.
TEST_F(CliAttributionE2eTest, OutDirFilesAgree) {
  const fs::path out = dir_ / "out";
  CliResult r =
      Run("attribute", {"--data", WriteInputs().string(), "--header=no",
                        "--steps=8", "--quiet", "--out-dir", out.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* file :
       {"attribution.csv", "attribution.json", "heatmap.html"}) {
    EXPECT_TRUE(Contains(r.out, (out / file).string())) << Describe(r);
  }
  const nlohmann::json j =
      nlohmann::json::parse(ReadFile(out / "attribution.json"));
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["methods"], nlohmann::json({"saliency", "gradient-x-input",
                                          "integrated-gradients", "rollout",
                                          "flow", "attention-x-gradient"}));
  EXPECT_EQ(j["results"][1]["text_a"], "she said, \"no\"");
  size_t units = 0;
  // (input, unit, method) -> score, and input -> gap, from the JSON.
  std::map<std::tuple<int, int, std::string>, double> scores;
  std::map<int, double> gaps;
  for (const auto& res : j["results"]) {
    const int input = res["input_index"];
    const size_t n = res["units"].size();
    ASSERT_GT(n, 2u);
    units += n;
    ASSERT_EQ(res["methods"].size(), static_cast<size_t>(kMethods));
    for (const auto& m : res["methods"]) {
      ASSERT_EQ(m["scores"].size(), n) << m["method"];
      for (size_t u = 0; u < n; ++u) {
        scores[{input, static_cast<int>(u), m["method"].get<std::string>()}] =
            m["scores"][u].get<double>();
      }
      if (m["method"] == "integrated-gradients") {
        ASSERT_FALSE(m["completeness_gap"].is_null()) << res;
        gaps[input] = m["completeness_gap"].get<double>();
        EXPECT_EQ(m["steps"], 8);
      }
      // Rollout's rows are attention rows: they sum to 1.
      if (m["method"] == "rollout") {
        double sum = 0;
        for (double s : m["scores"]) sum += s;
        EXPECT_NEAR(sum, 1.0, 1e-4) << res;
      }
    }
  }
  const auto rows = CsvRows(ReadFile(out / "attribution.csv"));
  ASSERT_EQ(rows.size(), 1 + units * kMethods);
  EXPECT_EQ(rows[0], (std::vector<std::string>{
                         "input_index", "unit", "text", "segment", "special",
                         "method", "score", "target", "completeness_gap"}));
  for (size_t k = 1; k < rows.size(); ++k) {
    const auto& f = rows[k];
    ASSERT_EQ(f.size(), 9u) << k;
    int input, unit;
    double score;
    ASSERT_TRUE(absl::SimpleAtoi(f[0], &input));
    ASSERT_TRUE(absl::SimpleAtoi(f[1], &unit));
    ASSERT_TRUE(absl::SimpleAtod(f[6], &score)) << f[6];
    EXPECT_EQ(f[2],
              j["results"][input]["units"][unit]["text"].get<std::string>());
    EXPECT_EQ(score, scores.at({input, unit, f[5]})) << k;
    if (f[5] == "integrated-gradients") {
      double gap;
      ASSERT_TRUE(absl::SimpleAtod(f[8], &gap)) << k;
      EXPECT_EQ(gap, gaps.at(input));
    } else {
      EXPECT_EQ(f[8], "") << k;
    }
  }
  const std::string html = ReadFile(out / "heatmap.html");
  EXPECT_EQ(Count(html, "<table class=\"attribution\""), 2u);
  EXPECT_EQ(Count(html, "<tr class=\"method-row\""), 2u * kMethods);
  EXPECT_EQ(Count(html, "<td class=\"cell\""), units * kMethods);
  for (const char* fetch : {"src=\"http", "href=\"http", "@import"}) {
    EXPECT_FALSE(Contains(html, fetch)) << fetch;
  }
}

// heatmap.html in headless Chromium (the flags of tests/demo/test_demo.py):
// a copy with a script that counts what laid out, read back from the DOM.
TEST_F(CliAttributionE2eTest, HeatmapRendersInChromium) {
  const fs::path out = dir_ / "out";
  CliResult r =
      Run("attribute", {"--text-a=the cat was here", "--text-b=it is not",
                        "--steps=4", "--quiet", "--out-dir", out.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  if (!fs::exists(kChromium)) GTEST_SKIP() << "chromium not installed";
  std::string page = ReadFile(out / "heatmap.html");
  const size_t body_end = page.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  page.insert(body_end, R"(<script>
const cells = [...document.querySelectorAll('td.cell')];
const sized = cells.filter(c => {
  const b = c.getBoundingClientRect();
  return b.width > 0 && b.height > 0;
});
const coloured = cells.filter(
    c => getComputedStyle(c).backgroundColor !== 'rgba(0, 0, 0, 0)');
const tipped = cells.filter(c => c.title.length > 0);
document.body.setAttribute('data-rows',
    document.querySelectorAll('tr.method-row').length);
document.body.setAttribute('data-cells', cells.length);
document.body.setAttribute('data-sized', sized.length);
document.body.setAttribute('data-coloured', coloured.length);
document.body.setAttribute('data-tipped', tipped.length);
</script>
)");
  const fs::path check = out / "check.html";
  std::ofstream(check) << page;
  const fs::path dom = dir_ / "dom.html", log = dir_ / "chromium.log";
  const std::string command = absl::StrCat(
      "timeout 120 ", kChromium,
      " --headless --no-sandbox --disable-gpu --no-first-run "
      "--disable-background-networking --virtual-time-budget=10000 "
      "--user-data-dir=",
      (dir_ / "chromium-profile").string(), " --dump-dom file://",
      check.string(), " > ", dom.string(), " 2> ", log.string());
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(log);
  const std::string body = ReadFile(dom);
  const nlohmann::json j =
      nlohmann::json::parse(ReadFile(out / "attribution.json"));
  const size_t cells = j["results"][0]["units"].size() * kMethods;
  EXPECT_TRUE(Contains(body, absl::StrCat("data-rows=\"", kMethods, "\"")))
      << body.substr(0, 2000);
  for (const char* what :
       {"data-cells", "data-sized", "data-coloured", "data-tipped"}) {
    EXPECT_TRUE(Contains(body, absl::StrCat(what, "=\"", cells, "\"")))
        << what << "\n"
        << body.substr(0, 2000);
  }
}

// The options reach the server and come back in the results: one class,
// probability, word units, two methods in the order asked, under a mask.
TEST_F(CliAttributionE2eTest, OptionsAndTableOnStdout) {
  const fs::path out = dir_ / "out";
  CliResult r = Run(
      "attribute",
      {"--text-a=the cat was here", "--method=integrated-gradients",
       "--method=saliency", "--target-class=0", "--output=probability",
       "--baseline=zero", "--rule=trapezoid", "--steps=4", "--granularity=word",
       "--ablate=0:1,2:3", "--quiet", "--out-dir", out.string()});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  const nlohmann::json j =
      nlohmann::json::parse(ReadFile(out / "attribution.json"));
  EXPECT_EQ(j["output"], "probability");
  EXPECT_EQ(j["baseline"], "zero");
  EXPECT_EQ(j["rule"], "trapezoid");
  EXPECT_EQ(j["granularity"], "word");
  EXPECT_EQ(j["methods"], nlohmann::json({"integrated-gradients", "saliency"}));
  const auto& res = j["results"][0];
  EXPECT_EQ(res["target"], 0);
  EXPECT_EQ(res["target_label"], "negative");
  EXPECT_EQ(res["methods"][0]["steps"], 4);
  // Words: [CLS], the, cat, was, here, [SEP].
  ASSERT_EQ(res["units"].size(), 6u) << res["units"];
  EXPECT_EQ(res["units"][2]["text"], "cat");
  EXPECT_GE(res["tokens"].size(), res["units"].size());

  // Without --out-dir: the table, units x methods, and the gap.
  r = Run("attribute", {"--text-a=the cat was here", "--steps=4", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* part : {"input 0: \"the cat was here\"", "explains logit[",
                           "unit  text", "saliency", "attention-x-gradient",
                           "integrated-gradients: completeness gap"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << Describe(r);
  }
  EXPECT_TRUE(Contains(r.out, "[CLS]")) << Describe(r);
}

TEST_F(CliAttributionE2eTest, PatchByAttribution) {
  const std::vector<std::string> inputs = {
      "--clean=the cat was here", "--corrupted=the dog was here", "--quiet"};
  auto run = [&](const std::string& method, const fs::path& out) {
    std::vector<std::string> args = inputs;
    args.push_back("--method=" + method);
    args.push_back("--out=" + out.string());
    return Run("patch", args);
  };
  CliResult exact = run("exact", dir_ / "exact");
  ASSERT_EQ(exact.exit_code, 0) << Describe(exact);
  CliResult r = run("attribution", dir_ / "attribution");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, ", method attribution\n")) << Describe(r);
  EXPECT_TRUE(Contains(exact.out, ", method exact\n")) << Describe(exact);
  const nlohmann::json e =
      nlohmann::json::parse(ReadFile(dir_ / "exact" / "patch.json"));
  const nlohmann::json j =
      nlohmann::json::parse(ReadFile(dir_ / "attribution" / "patch.json"));
  EXPECT_EQ(j["plan"]["method"], "attribution");
  EXPECT_EQ(e["plan"]["method"], "exact");
  ASSERT_EQ(j["results"].size(), 12u);
  for (const auto& site : j["results"]) {
    EXPECT_TRUE(site["logits"].empty()) << site;
    EXPECT_TRUE(std::isfinite(site["logit_diff"].get<double>())) << site;
  }
  // The two runs' own scores do not depend on the method.
  for (const char* diff : {"clean_logit_diff", "corrupted_logit_diff"}) {
    EXPECT_NEAR(j["plan"][diff].get<double>(), e["plan"][diff].get<double>(),
                1e-5)
        << diff;
  }
  const auto rows = CsvRows(ReadFile(dir_ / "attribution" / "patch.csv"));
  ASSERT_EQ(rows.size(), 13u);
  EXPECT_EQ(rows[0].back(), "method");
  EXPECT_EQ(rows[1].back(), "attribution");
  EXPECT_TRUE(Contains(ReadFile(dir_ / "attribution" / "patch_heads.svg"),
                       "attribution patching"));
}

TEST(CliAttributionE2eNoServerTest, BadFlagsExit2) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"attribute", "--text-a=x", "--method=lime"},
           {"attribute", "--text-a=x", "--output=loss"},
           {"attribute", "--text-a=x", "--rule=simpson"},
           {"attribute", "--text-a=x", "--steps=-1"},
           {"attribute", "--text-a=x", "--mode=resample", "--statistics=s"},
           {"patch", "--clean=a", "--corrupted=b", "--method=guess"}}) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << Describe(r);
  }
  CliResult help = RunCli({"attribute", "--help"});
  EXPECT_EQ(help.exit_code, 0) << Describe(help);
  for (const char* flag : {"--method", "--target-class", "--out-dir",
                           "--granularity", "--ablate"}) {
    EXPECT_TRUE(Contains(help.out, flag)) << flag;
  }
}

}  // namespace
}  // namespace client
}  // namespace bertology
