// Mean and resample ablation against tests/golden/intervention_reference.py,
// a float64 reference with hooks on each head's output (not this code).
#include "server/core/model/head_reference.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model/golden_util.h"
#include "server/core/model/model.h"
#include "server/core/model/model_tensors.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// float32 against float64: the effects checked are > 1e-2.
constexpr double kLogitTol = 1e-4;
constexpr double kStatTol = 1e-5;

class HeadReferenceTest : public golden::InterventionsFixture {
 protected:
  static void SetUpTestSuite() {
    InterventionsFixture::SetUpTestSuite();
    const json& ref = (*golden_)["reference"];
    for (size_t r = 0; r < ref["input_ids"].size(); ++r) {
      reference_.push_back(golden::EncodingOf(ref["input_ids"][r],
                                              ref["token_type_ids"][r],
                                              ref["attention_mask"][r]));
    }
  }

  // The golden inputs under one mask per row.
  static torch::Tensor Logits(const std::vector<HeadMask>& masks) {
    const json& in = (*golden_)["inputs"];
    ModelInput input{golden::ToTensor(in["input_ids"], torch::kLong),
                     golden::ToTensor(in["token_type_ids"], torch::kLong),
                     golden::ToTensor(in["attention_mask"], torch::kLong)};
    std::vector<const HeadMask*> ptrs;
    for (const HeadMask& m : masks) ptrs.push_back(&m);
    auto out = model_->ForwardTensors(input, ptrs, ForwardOptions{});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->logits : torch::Tensor();
  }

  static HeadMask CaseMask(const json& c, int row) {
    return golden::InterventionMask(c, row, *stats_);
  }

  static const json& Case(const std::string& name) {
    for (const json& c : (*golden_)["ablation_cases"]) {
      if (c["name"] == name) return c;
    }
    ADD_FAILURE() << "no golden case " << name;
    return (*golden_)["ablation_cases"][0];
  }

  inline static std::vector<Encoding> reference_;
};

TEST_F(HeadReferenceTest, StatisticsMatchTheReference) {
  const HeadReference& s = **stats_;
  const json& ref = (*golden_)["reference"];
  EXPECT_EQ(s.examples, 4);
  EXPECT_EQ(s.tokens, ref["tokens"].get<int64_t>());
  EXPECT_LT(
      golden::MaxAbsDiff(s.mean, golden::ToTensor(ref["mean"], torch::kDouble)),
      kStatTol);
  EXPECT_LT(golden::MaxAbsDiff(s.pooled,
                               golden::ToTensor(ref["pooled"], torch::kDouble)),
            kStatTol);
  // The id is a digest of the model and the examples: stable, and another
  // set gets another id.
  std::vector<const Encoding*> ptrs = {&reference_[0], &reference_[1]};
  EXPECT_EQ(HeadReferenceId(*model_, ptrs).size(), 19u);
  EXPECT_NE(HeadReferenceId(*model_, ptrs), s.id);
  ptrs = {&reference_[0], &reference_[1], &reference_[2], &reference_[3]};
  EXPECT_EQ(HeadReferenceId(*model_, ptrs), s.id);
}

TEST_F(HeadReferenceTest, ResampleOrderMatchesTheReferenceDraws) {
  for (const std::string name : {"resample_ablate", "resample_fractional"}) {
    const json& c = Case(name);
    const std::vector<int> order = ResampleOrder(c["seed"].get<uint64_t>(), 4);
    std::vector<int> draws;
    for (int k = 0; k < c["draws"].get<int>(); ++k) {
      draws.push_back(order[k % 4]);
    }
    EXPECT_EQ(draws, c["draw_examples"].get<std::vector<int>>()) << name;
  }
}

TEST_F(HeadReferenceTest, MeanAndResampleMatchTheReference) {
  for (const json& c : (*golden_)["ablation_cases"]) {
    std::vector<HeadMask> masks;
    for (size_t r = 0; r < c["head_mask"].size(); ++r) {
      masks.push_back(CaseMask(c, static_cast<int>(r)));
    }
    const torch::Tensor logits = Logits(masks);
    EXPECT_LT(golden::MaxAbsDiff(logits,
                                 golden::ToTensor(c["logits"], torch::kDouble)),
              kLogitTol)
        << c["name"];
  }
  // The modes differ by far more than the tolerance.
  const json& mean = Case("mean_ablate");
  const json& zero = Case("zero_ablate");
  EXPECT_GT(
      golden::MaxAbsDiff(golden::ToTensor(mean["logits"], torch::kDouble),
                         golden::ToTensor(zero["logits"], torch::kDouble)),
      1e-2);
}

TEST_F(HeadReferenceTest, RowsInDifferentModesShareAPass) {
  // One batch: mean, resample, zero and unmasked rows; each row equals its
  // golden case's row computed alone.
  const json& mean = Case("mean_ablate");
  const json& resample = Case("resample_fractional");
  const json& zero = Case("zero_ablate");
  std::vector<HeadMask> masks = {CaseMask(mean, 0), CaseMask(resample, 1),
                                 CaseMask(zero, 2),
                                 HeadMask::Identity(3, 4, AblationMode::kMean)};
  const torch::Tensor logits = Logits(masks);
  EXPECT_LT(golden::MaxAbsDiff(
                logits[0], golden::ToTensor(mean["logits"][0], torch::kDouble)),
            kLogitTol);
  EXPECT_LT(
      golden::MaxAbsDiff(
          logits[1], golden::ToTensor(resample["logits"][1], torch::kDouble)),
      kLogitTol);
  EXPECT_LT(golden::MaxAbsDiff(
                logits[2], golden::ToTensor(zero["logits"][2], torch::kDouble)),
            kLogitTol);
}

TEST_F(HeadReferenceTest, RefusesMasksWithoutReference) {
  auto mask = HeadMask::Ablate(3, 4, {{0, 1}}, AblationMode::kMean);
  ASSERT_TRUE(mask.ok());
  auto st = model_->CheckHeadMask(*mask, "head_mask");
  EXPECT_THAT(st.message(), HasSubstr("without reference statistics"));
  mask->set_reference(*stats_, ResampleDraws{65, 1});
  EXPECT_TRUE(model_->CheckHeadMask(*mask, "head_mask").ok());
  auto resample = HeadMask::Ablate(3, 4, {{0, 1}}, AblationMode::kResample);
  resample->set_reference(*stats_, ResampleDraws{65, 1});
  EXPECT_THAT(model_->CheckHeadMask(*resample, "head_mask").message(),
              HasSubstr("65 resample draws"));
  EXPECT_FALSE(
      ComputeHeadReference(*model_, std::vector<const Encoding*>{}).ok());
}

}  // namespace
}  // namespace bertology
