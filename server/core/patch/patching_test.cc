// Activation patching against tests/golden/intervention_reference.py, a
// float64 reference with hooks on each head's output (not this code).
#include "server/core/patch/patching.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model/golden_for_tests.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr double kLogitTol = 1e-4;

double MaxAbsDiff(const std::vector<float>& a, const json& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::abs(a[i] - b[i].get<double>()));
  }
  return m;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  return MaxAbsDiff(a, json(b));
}

PatchSite SiteOf(const json& s) {
  PatchSite site;
  site.kind = s["kind"] == "residual" ? PatchSite::Kind::kResidual
                                      : PatchSite::Kind::kHead;
  site.layer = s["layer"];
  site.head = s.value("head", 0);
  site.position = s.value("position", -1);
  return site;
}

class PatchingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    golden_ = golden::Read("interventions.golden.json")["patching"];
    ModelOptions options;
    options.dir = golden::SourceDir() + "/tests/golden/tiny-bert-cls";
    auto model = Model::Load(options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    clean_ = golden::EncodingOf(golden_["clean_ids"], golden_["clean_types"]);
    corrupted_ = golden::EncodingOf(golden_["corrupted_ids"],
                                    golden_["corrupted_types"]);
  }
  std::unique_ptr<ActivationPatcher> Patcher(PatchDirection direction) {
    auto p = ActivationPatcher::Create(*model_, clean_, corrupted_, direction);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }
  json golden_;
  std::unique_ptr<Model> model_;
  Encoding clean_, corrupted_;
};

TEST_F(PatchingTest, EverySiteMatchesTheReferenceInBothDirections) {
  for (const auto& [direction, key] :
       {std::make_pair(PatchDirection::kCleanIntoCorrupted,
                       "clean_into_corrupted"),
        std::make_pair(PatchDirection::kCorruptedIntoClean,
                       "corrupted_into_clean")}) {
    auto patcher = Patcher(direction);
    ASSERT_NE(patcher, nullptr);
    EXPECT_LT(MaxAbsDiff(patcher->clean_logits(), golden_["clean_logits"]),
              kLogitTol);
    EXPECT_LT(
        MaxAbsDiff(patcher->corrupted_logits(), golden_["corrupted_logits"]),
        kLogitTol);
    // Every site as a row of one pass (rows start at different layers).
    std::vector<std::vector<PatchSite>> rows;
    for (const json& s : golden_["sites"]) rows.push_back({SiteOf(s)});
    auto logits = patcher->Run(rows);
    ASSERT_TRUE(logits.ok()) << logits.status();
    ASSERT_EQ(logits->size(), golden_["sites"].size());
    const std::vector<float>& target =
        direction == PatchDirection::kCleanIntoCorrupted
            ? patcher->corrupted_logits()
            : patcher->clean_logits();
    int moved = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const json& s = golden_["sites"][i];
      EXPECT_LT(MaxAbsDiff((*logits)[i], s[key]), kLogitTol)
          << key << " site " << s.dump();
      moved += MaxAbsDiff((*logits)[i], target) > 1e-2;
    }
    EXPECT_GT(moved, static_cast<int>(rows.size()) / 2);
  }
}

TEST_F(PatchingTest, PatchingEverythingGivesTheSourceAndNothingGivesTheTarget) {
  auto patcher = Patcher(PatchDirection::kCleanIntoCorrupted);
  ASSERT_NE(patcher, nullptr);
  std::vector<PatchSite> all_heads;
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 4; ++h)
      all_heads.push_back({PatchSite::Kind::kHead, l, h});
  }
  PatchSite embeddings{PatchSite::Kind::kResidual, 0, 0};
  auto logits = patcher->Run({all_heads, {embeddings}, {}});
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_LT(MaxAbsDiff((*logits)[0], golden_["all_heads_all_layers"]["logits"]),
            kLogitTol);
  // [CLS] is not corrupted, so every head patched restores the clean
  // logits; the embeddings patched restore them too.
  EXPECT_LT(MaxAbsDiff((*logits)[0], patcher->clean_logits()), kLogitTol);
  EXPECT_LT(MaxAbsDiff((*logits)[1], patcher->clean_logits()), kLogitTol);
  EXPECT_LT(MaxAbsDiff((*logits)[2], patcher->corrupted_logits()), kLogitTol);
  EXPECT_GT(MaxAbsDiff(patcher->clean_logits(), patcher->corrupted_logits()),
            0.5);
}

TEST_F(PatchingTest, ASiteEqualInBothRunsChangesNothing) {
  // Position 0 of layer 0's input: [CLS]'s embedding, the same in both.
  auto patcher = Patcher(PatchDirection::kCleanIntoCorrupted);
  ASSERT_NE(patcher, nullptr);
  // Compared bit for bit with an unpatched row of the same pass (the
  // unpatched run of Create runs the last layer in full, ~1e-6 apart).
  auto logits = patcher->Run({{{PatchSite::Kind::kResidual, 0, 0, 0}}, {}});
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_EQ((*logits)[0], (*logits)[1]);
  EXPECT_LT(MaxAbsDiff((*logits)[0], patcher->corrupted_logits()), 1e-5);
}

TEST_F(PatchingTest, RefusesBadInput) {
  Encoding shorter = clean_;
  shorter.tokens.pop_back();
  auto p = ActivationPatcher::Create(*model_, clean_, shorter,
                                     PatchDirection::kCleanIntoCorrupted);
  EXPECT_THAT(p.status().message(), HasSubstr("same length"));
  auto patcher = Patcher(PatchDirection::kCleanIntoCorrupted);
  ASSERT_NE(patcher, nullptr);
  EXPECT_THAT(
      patcher->CheckSite({PatchSite::Kind::kHead, 3, 0}, "sites[2]").message(),
      HasSubstr("sites[2].layer=3 out of range [0, 3)"));
  EXPECT_TRUE(patcher->CheckSite({PatchSite::Kind::kResidual, 3, 0}, "s").ok());
  EXPECT_THAT(patcher->CheckSite({PatchSite::Kind::kHead, 0, 4}, "s").message(),
              HasSubstr("s.head=4"));
  EXPECT_THAT(
      patcher->CheckSite({PatchSite::Kind::kHead, 0, 0, 12}, "s").message(),
      HasSubstr("s.position=12 out of range [0, 12)"));
  EXPECT_FALSE(patcher->Run({{{PatchSite::Kind::kHead, 0, 0, 40}}}).ok());
}

}  // namespace
}  // namespace bertology
