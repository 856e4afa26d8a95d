#include "server/service/convert/request_validation.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/service/registry/reference_store.h"

namespace bertology {
namespace {

TEST(IsValidUtf8Test, AcceptsAndRejects) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(ParseHeadMaskTest, NamesTheField) {
  v1::HeadMask proto;
  auto* lh = proto.mutable_ablate()->add_heads();
  lh->set_layer(5);
  auto mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mask.status().message().find("head_mask.ablate.heads[0].layer=5"),
            std::string::npos)
      << mask.status();
}

TEST(ParseHeadMaskTest, DenseChecks) {
  v1::HeadMask proto;
  for (int i = 0; i < 11; ++i) proto.mutable_dense()->add_values(1.0f);
  auto mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("12"), std::string::npos);
  proto.mutable_dense()->add_values(NAN);
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.dense.values[11]"),
            std::string::npos);
  proto.mutable_dense()->set_values(11, 0.5f);
  proto.set_mode(v1::ABLATION_MODE_UNIFORM);
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->mode(), AblationMode::kUniform);
  EXPECT_FLOAT_EQ(mask->value(2, 3), 0.5f);
}

TEST(ParseHeadMaskTest, UnknownMode) {
  v1::HeadMask proto;
  proto.set_mode(static_cast<v1::AblationMode>(9));
  auto mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.mode=9"),
            std::string::npos);
}

TEST(ValidateTextTest, Limits) {
  ServiceLimits limits;
  limits.max_text_bytes = 4;
  EXPECT_TRUE(ValidateText("abcd", "t", limits, false).ok());
  EXPECT_NE(ValidateText("abcde", "t", limits, false)
                .message()
                .find("--max_text_bytes=4"),
            std::string::npos);
  EXPECT_FALSE(ValidateText("", "t", limits, false).ok());
  EXPECT_TRUE(ValidateText("", "t", limits, true).ok());
}

// HeadReference is opaque outside the core (no libtorch here), and request
// validation only passes the pointer on: a sentinel address with a no-op
// deleter stands in for statistics.
std::shared_ptr<const HeadReference> Sentinel(int* storage) {
  return std::shared_ptr<const HeadReference>(
      reinterpret_cast<const HeadReference*>(storage), [](const auto*) {});
}

v1::HeadMask MeanMaskOfL0H1() {
  v1::HeadMask proto;
  proto.set_mode(v1::ABLATION_MODE_MEAN);
  auto* lh = proto.mutable_ablate()->add_heads();
  lh->set_layer(0);
  lh->set_head(1);
  return proto;
}

TEST(ParseHeadMaskTest, ReferenceModesNeedStatistics) {
  int a = 0, b = 0;
  ReferenceStore store(4);
  store.Add(Sentinel(&a), {"hs-aaaa", 10, 100, 0});
  v1::HeadMask proto = MeanMaskOfL0H1();

  // A call that takes no statistics refuses the mode by name.
  auto mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mask.status().message().find("head_mask.mode=mean"),
            std::string::npos)
      << mask.status();

  // No id and no fallback.
  MaskReferences refs{&store};
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.statistics is empty"),
            std::string::npos)
      << mask.status();

  // An id this replica does not hold: FAILED_PRECONDITION, listing the held.
  proto.set_statistics("hs-bbbb");
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(mask.status().message().find("head_mask.statistics=hs-bbbb"),
            std::string::npos)
      << mask.status();
  EXPECT_NE(mask.status().message().find("held: hs-aaaa"), std::string::npos)
      << mask.status();

  // A held id is attached; one draw unless asked.
  proto.set_statistics("hs-aaaa");
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->mode(), AblationMode::kMean);
  EXPECT_EQ(mask->reference().get(), reinterpret_cast<HeadReference*>(&a));
  EXPECT_EQ(mask->draws().count, 1);

  // The fallback (a sweep's statistics) serves a mask naming none, with the
  // sweep's draws; a mask's own resample options win.
  proto.clear_statistics();
  proto.set_mode(v1::ABLATION_MODE_RESAMPLE);
  refs.fallback = Sentinel(&b);
  refs.fallback_draws = ResampleDraws{3, 9};
  // Resample averages a metric over draws: a call that scores none (every
  // call but SweepAblation) refuses it, naming the field.
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.mode=resample"),
            std::string::npos)
      << mask.status();
  refs.allow_resample = true;
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->draws().alignment, ResampleAlignment::kMatchedLengths);
  EXPECT_EQ(mask->reference().get(), reinterpret_cast<HeadReference*>(&b));
  EXPECT_EQ(mask->draws().count, 3);
  EXPECT_EQ(mask->draws().seed, 9u);
  proto.mutable_resample()->set_draws(5);
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->draws().count, 5);
  EXPECT_EQ(mask->draws().seed, 0u);

  proto.mutable_resample()->set_alignment(v1::RESAMPLE_ALIGNMENT_SCALED);
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->draws().alignment, ResampleAlignment::kScaled);

  // Too many draws, or an unknown alignment, name the field and the bound.
  proto.mutable_resample()->set_draws(65);
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.resample.draws=65"),
            std::string::npos)
      << mask.status();
  proto.mutable_resample()->set_draws(2);
  proto.mutable_resample()->set_alignment(
      static_cast<v1::ResampleAlignment>(7));
  mask = ParseHeadMask(proto, 3, 4, AblationMode::kZero, "head_mask", refs);
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.status().message().find("head_mask.resample.alignment=7"),
            std::string::npos)
      << mask.status();
  proto.mutable_resample()->set_alignment(
      v1::RESAMPLE_ALIGNMENT_MATCHED_LENGTHS);
  // An unknown mode (a role-mean spelled as a number the server lacks)
  // names the field.
  EXPECT_NE(ParseAblationMode(static_cast<v1::AblationMode>(9),
                              AblationMode::kZero, "head_mask.mode")
                .status()
                .message()
                .find("head_mask.mode=9"),
            std::string::npos);
  EXPECT_EQ(*ParseAblationMode(v1::ABLATION_MODE_MEAN_BY_ROLE,
                               AblationMode::kZero, "mode"),
            AblationMode::kMeanByRole);

  // The identity mask in mean mode ablates nothing and needs nothing, but
  // gets the statistics it names (a gradient taken at it reads them), and
  // an id not held is refused for it too.
  v1::HeadMask identity;
  identity.set_mode(v1::ABLATION_MODE_MEAN);
  mask = ParseHeadMask(identity, 3, 4, AblationMode::kZero, "head_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_TRUE(mask->IsIdentity());
  mask = ParseHeadMask(identity, 3, 4, AblationMode::kZero, "head_mask",
                       MaskReferences{&store});
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->reference(), nullptr);
  identity.set_statistics("hs-aaaa");
  mask = ParseHeadMask(identity, 3, 4, AblationMode::kZero, "head_mask",
                       MaskReferences{&store});
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->reference().get(), reinterpret_cast<HeadReference*>(&a));
  identity.set_statistics("hs-cccc");
  mask = ParseHeadMask(identity, 3, 4, AblationMode::kZero, "head_mask",
                       MaskReferences{&store});
  EXPECT_EQ(mask.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ReferenceStoreTest, KeepsTheNewestAndOneCopyPerId) {
  int a = 0, b = 0, c = 0, dup = 0;
  ReferenceStore store(2);
  store.Add(Sentinel(&a), {"hs-a", 1, 1, 0});
  store.Add(Sentinel(&b), {"hs-b", 1, 1, 0});
  // The same id again keeps the one held (two requests computing one set).
  EXPECT_EQ(store.Add(Sentinel(&dup), {"hs-a", 1, 1, 0}).get(),
            reinterpret_cast<HeadReference*>(&a));
  store.Add(Sentinel(&c), {"hs-c", 1, 1, 0});
  std::vector<std::string> ids;
  for (const auto& info : store.List()) ids.push_back(info.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"hs-b", "hs-c"}));
  EXPECT_EQ(store.Get("hs-a"), nullptr);
  EXPECT_EQ(store.Find("hs-a", "statistics").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace bertology
