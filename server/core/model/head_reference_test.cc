// Mean, role-mean and resample ablation against
// tests/golden/intervention_reference.py, a float64 reference with hooks on
// each head's output (not this code).
#include "server/core/model/head_reference.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model/engine.h"
#include "server/core/model/golden_for_tests.h"
#include "server/core/model/model.h"
#include "server/core/model/reference_tensors.h"

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

  // The golden inputs under one mask per row, every row at draw `draw`.
  static torch::Tensor Logits(const std::vector<HeadMask>& masks,
                              int draw = 0) {
    return Logits(masks, golden::GoldenInput(*model_, *golden_, draw));
  }
  static torch::Tensor Logits(const std::vector<HeadMask>& masks,
                              const ModelInput& input) {
    std::vector<const HeadMask*> ptrs;
    for (const HeadMask& m : masks) ptrs.push_back(&m);
    auto out = model_->engine().Run(input, ptrs, EngineOptions{});
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
  EXPECT_EQ(s.examples, 12);
  EXPECT_EQ(s.tokens, ref["tokens"].get<int64_t>());
  EXPECT_LT(golden::MaxAbsDiff(s.tensors->mean,
                               golden::ToTensor(ref["mean"], torch::kDouble)),
            kStatTol);
  EXPECT_LT(
      golden::MaxAbsDiff(s.tensors->role_means,
                         golden::ToTensor(ref["role_means"], torch::kDouble)),
      kStatTol);
  for (int r = 0; r < kNumTokenRoles; ++r) {
    EXPECT_EQ(s.role_tokens[r], ref["role_tokens"][r].get<int64_t>()) << r;
  }
  ASSERT_TRUE(s.tensors->token_outputs.defined());
  EXPECT_EQ(s.tensors->token_outputs.size(0), s.tokens);
  // The id is a digest of the model and the examples: stable, and another
  // set gets another id.
  std::vector<const Encoding*> ptrs = {&reference_[0], &reference_[1]};
  EXPECT_EQ(HeadReferenceId(*model_, ptrs).size(), 19u);
  EXPECT_NE(HeadReferenceId(*model_, ptrs), s.id);
  ptrs.clear();
  for (const Encoding& e : reference_) ptrs.push_back(&e);
  EXPECT_EQ(HeadReferenceId(*model_, ptrs), s.id);
}

TEST_F(HeadReferenceTest, RoleMeansDifferFromThePooledMean) {
  // What the pooled mean hides: a head's [CLS] output is not its mean over
  // every token (the reviewer's L1H9: distance 2.09 at a norm of 0.44).
  const HeadReference& s = **stats_;
  EXPECT_GT(golden::MaxAbsDiff(s.tensors->role_means[0], s.tensors->mean),
            1e-2);
}

TEST_F(HeadReferenceTest, ResampleSourcesMatchTheReferenceDraws) {
  // Drawn per input and per draw from the pool the alignment allows, never
  // the input itself, as the float64 script draws them.
  const json& in = (*golden_)["inputs"];
  int checked = 0;
  for (const json& c : (*golden_)["ablation_cases"]) {
    if (c["mode"] != "resample") continue;
    const HeadMask mask = CaseMask(c, 0);
    for (size_t r = 0; r < in["input_ids"].size(); ++r) {
      const TokenLayout layout = TokenLayout::Of(
          golden::EncodingOf(in["input_ids"][r], in["token_type_ids"][r],
                             in["attention_mask"][r]));
      for (int k = 0; k < mask.draws().count; ++k) {
        EXPECT_EQ(ResampleSource(**stats_, layout, mask.draws(), k),
                  c["draw_sources"][r][k].get<int>())
            << c["name"] << " row " << r << " draw " << k;
        EXPECT_NE(ResampleSource(**stats_, layout, mask.draws(), k),
                  static_cast<int>(r));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * (3 + 2 + 4));
}

TEST_F(HeadReferenceTest, EveryModeMatchesTheReference) {
  for (const json& c : (*golden_)["ablation_cases"]) {
    std::vector<HeadMask> masks;
    for (size_t r = 0; r < c["head_mask"].size(); ++r) {
      masks.push_back(CaseMask(c, static_cast<int>(r)));
    }
    const int draws = std::max(1, c["draws"].get<int>());
    for (int k = 0; k < draws; ++k) {
      EXPECT_LT(golden::MaxAbsDiff(Logits(masks, k), golden::CaseLogits(c, k)),
                kLogitTol)
          << c["name"] << " draw " << k;
    }
  }
  // The modes differ by far more than the tolerance, and so do draws from
  // different sources.
  EXPECT_GT(golden::MaxAbsDiff(golden::CaseLogits(Case("mean_ablate")),
                               golden::CaseLogits(Case("zero_ablate"))),
            1e-2);
  EXPECT_GT(golden::MaxAbsDiff(golden::CaseLogits(Case("mean_ablate")),
                               golden::CaseLogits(Case("role_mean_ablate"))),
            1e-2);
  EXPECT_GT(golden::MaxAbsDiff(golden::CaseLogits(Case("resample_scaled"), 0),
                               golden::CaseLogits(Case("resample_scaled"), 1)),
            1e-2);
}

TEST_F(HeadReferenceTest, RowsInDifferentModesShareAPass) {
  // One batch: mean, role mean, resample (each row its own draw), zero and
  // unmasked rows; each row equals its golden case's row computed alone.
  const json& mean = Case("mean_ablate");
  const json& role = Case("role_mean_fractional");
  const json& resample = Case("resample_scaled");
  const json& zero = Case("zero_ablate");
  std::vector<HeadMask> masks = {CaseMask(mean, 0), CaseMask(role, 1),
                                 CaseMask(resample, 2), CaseMask(zero, 3)};
  ModelInput input = golden::GoldenInput(*model_, *golden_);
  input.draws = {0, 0, 3, 0};
  const torch::Tensor logits = Logits(masks, input);
  EXPECT_LT(golden::MaxAbsDiff(logits[0], golden::CaseLogits(mean)[0]),
            kLogitTol);
  EXPECT_LT(golden::MaxAbsDiff(logits[1], golden::CaseLogits(role)[1]),
            kLogitTol);
  EXPECT_LT(golden::MaxAbsDiff(logits[2], golden::CaseLogits(resample, 3)[2]),
            kLogitTol);
  EXPECT_LT(golden::MaxAbsDiff(logits[3], golden::CaseLogits(zero)[3]),
            kLogitTol);
}

TEST_F(HeadReferenceTest, ResumedFromCachedHeadOutputs) {
  // The sweep's path with positional fills: an unmasked pass (packed and
  // padded) caches layer 1's input and head outputs; masks from layer 1
  // resume there and equal the full pass.
  for (bool pack : {false, true}) {
    for (const std::string name : {"role_mean_ablate", "resample_ablate"}) {
      SCOPED_TRACE(name + (pack ? " packed" : " padded"));
      const json& c = Case(name);
      ModelInput input = golden::GoldenInput(*model_, *golden_, 1);
      EngineOptions capture;
      capture.pack_tokens = pack;
      capture.capture_hidden = {1};
      capture.capture_head_outputs = {1};
      auto base = model_->engine().Run(input, {}, capture);
      ASSERT_TRUE(base.ok()) << base.status();
      std::vector<HeadMask> masks;
      std::vector<const HeadMask*> ptrs;
      for (int r = 0; r < 4; ++r) {
        auto m = HeadMask::Ablate(3, 4, {{1, r}, {2, (r + 1) % 4}},
                                  CaseMask(c, 0).mode());
        ASSERT_TRUE(m.ok());
        m->set_reference(*stats_, CaseMask(c, 0).draws());
        masks.push_back(*m);
      }
      for (const HeadMask& m : masks) ptrs.push_back(&m);
      auto full = model_->engine().Run(input, ptrs, EngineOptions{});
      ASSERT_TRUE(full.ok()) << full.status();
      input.start_hidden = base->hidden.at(1);
      input.start_head_outputs = base->head_outputs.at(1);
      EngineOptions resume;
      resume.pack_tokens = pack;
      resume.start_layer = 1;
      auto resumed = model_->engine().Run(input, ptrs, resume);
      ASSERT_TRUE(resumed.ok()) << resumed.status();
      EXPECT_LT(golden::MaxAbsDiff(resumed->logits, full->logits), 1e-5);
    }
  }
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

TEST_F(HeadReferenceTest, RefusesFillsTheReferenceCannotGive) {
  // A reference of single texts has no text_b, so no role mean for it, and
  // no matched resample source for a pair; one over the token budget keeps
  // no per-token outputs. Each is FAILED_PRECONDITION naming the row.
  Encoding single = reference_[0];
  single.tokens.resize(4);  // [CLS] a a a, all segment 0
  Encoding single2 = single;
  single2.tokens[1].id = 40;
  auto singles = ComputeHeadReference(*model_, {&single, &single2});
  ASSERT_TRUE(singles.ok()) << singles.status();
  auto small = ComputeHeadReference(*model_, {&reference_[0], &reference_[4]},
                                    32, /*token_output_budget=*/0);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_FALSE((*small)->tensors->token_outputs.defined());
  struct Case {
    AblationMode mode;
    std::shared_ptr<const HeadReference> ref;
    ResampleAlignment alignment;
    const char* message;
  };
  for (const Case& c :
       {Case{AblationMode::kMeanByRole, *singles,
             ResampleAlignment::kMatchedLengths, "no token of that role"},
        Case{AblationMode::kResample, *singles, ResampleAlignment::kScaled,
             "no reference input"},
        Case{AblationMode::kResample, *small,
             ResampleAlignment::kMatchedLengths, "did not keep them"}}) {
    auto m = HeadMask::Ablate(3, 4, {{0, 1}}, c.mode);
    ASSERT_TRUE(m.ok());
    ResampleDraws draws;
    draws.alignment = c.alignment;
    m->set_reference(c.ref, draws);
    std::vector<HeadMask> masks(4, *m);
    std::vector<const HeadMask*> ptrs;
    for (const HeadMask& x : masks) ptrs.push_back(&x);
    auto out = model_->engine().Run(golden::GoldenInput(*model_, *golden_),
                                    ptrs, EngineOptions{});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition)
        << out.status();
    EXPECT_THAT(out.status().message(), HasSubstr(c.message));
    EXPECT_THAT(out.status().message(), HasSubstr("rows[0].mask"));
  }
  // A draw out of range, and masks without the rows' layouts.
  auto m = HeadMask::Ablate(3, 4, {{0, 1}}, AblationMode::kResample);
  m->set_reference(*stats_, ResampleDraws{2, 0});
  ModelInput input = golden::GoldenInput(*model_, *golden_, 2);
  std::vector<const HeadMask*> ptrs(4, &*m);
  EXPECT_THAT(model_->engine().Run(input, ptrs, {}).status().message(),
              HasSubstr("rows[0].draw=2 out of range [0, 2)"));
  input.draws.clear();
  input.layouts.clear();
  EXPECT_THAT(model_->engine().Run(input, ptrs, {}).status().message(),
              HasSubstr("token layout"));
}

}  // namespace
}  // namespace bertology

namespace bertology {
namespace {

// `<s> a... </s> </s> b... </s>` (RoBERTa), specials marked as Encode
// marks them: the second </s> is segment 1.
Encoding RobertaPair(int len_a, int len_b) {
  Encoding e;
  auto add = [&](int segment, bool special) {
    Token t;
    t.segment = segment;
    t.special = special;
    t.id = static_cast<int>(e.tokens.size()) + 5;
    e.tokens.push_back(t);
  };
  add(0, true);
  for (int i = 0; i < len_a; ++i) add(0, false);
  add(0, true);
  add(1, true);
  for (int i = 0; i < len_b; ++i) add(1, false);
  add(1, true);
  return e;
}

TEST(TokenLayoutTest, RobertaPairHasTwoSeparatorsBetweenTheTexts) {
  const TokenLayout layout = TokenLayout::Of(RobertaPair(3, 2));
  EXPECT_TRUE(layout.pair);
  EXPECT_EQ(layout.len_a, 3);
  EXPECT_EQ(layout.len_b, 2);
  EXPECT_EQ(layout.separators, 2);
  EXPECT_EQ(layout.sep_a(), 4);
  EXPECT_EQ(layout.sep_b(), 8);
  std::vector<TokenRole> roles;
  for (int t = 0; t < layout.length; ++t) roles.push_back(layout.RoleAt(t));
  using R = TokenRole;
  EXPECT_EQ(roles, (std::vector<R>{R::kCls, R::kTokenA, R::kTokenA, R::kTokenA,
                                   R::kSepA, R::kSepA, R::kTokenB, R::kTokenB,
                                   R::kSepB}));
  // A BERT pair with the same texts has one separator between them.
  Encoding bert = RobertaPair(3, 2);
  bert.tokens.erase(bert.tokens.begin() + 5);
  const TokenLayout b = TokenLayout::Of(bert);
  EXPECT_EQ(b.separators, 1);
  EXPECT_EQ(b.len_b, 2);
  EXPECT_EQ(b.RoleAt(5), TokenRole::kTokenB);
}

TEST(TokenLayoutTest, ScaledResampleKeepsEachSeparatorItsOwn) {
  HeadReference reference;
  reference.layouts = {TokenLayout::Of(RobertaPair(4, 4))};
  reference.offsets = {0, 12};
  const TokenLayout row = TokenLayout::Of(RobertaPair(2, 1));
  const std::vector<int64_t> rows =
      ResampleTokenRows(reference, 0, row, ResampleAlignment::kScaled);
  // <s>, a's 2 tokens over the reference's 4, both </s>, b's token, </s>.
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0], 0);
  EXPECT_EQ(rows[3], 5);  // first </s>
  EXPECT_EQ(rows[4], 6);  // second </s>
  EXPECT_GE(rows[5], 7);  // text_b, after both separators
  EXPECT_LT(rows[5], 11);
  EXPECT_EQ(rows[6], 11);  // last </s>
}

}  // namespace
}  // namespace bertology
