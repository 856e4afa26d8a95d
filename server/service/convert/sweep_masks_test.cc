#include "server/service/convert/sweep_masks.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

SweepMaskOptions Options() {
  SweepMaskOptions o;
  o.layers = 3;
  o.heads = 4;
  return o;
}

v1::MaskSpec Explicit(const std::string& id) {
  v1::MaskSpec spec;
  spec.mutable_explicit_mask()->set_id(id);
  v1::LayerHead* h = spec.mutable_explicit_mask()
                         ->mutable_mask()
                         ->mutable_ablate()
                         ->add_heads();
  h->set_layer(0);
  h->set_head(1);
  return spec;
}

v1::MaskSpec Random(double fraction, int repeats, uint64_t seed) {
  v1::MaskSpec spec;
  spec.mutable_random()->set_fraction(fraction);
  spec.mutable_random()->set_repeats(repeats);
  spec.mutable_random()->set_seed(seed);
  return spec;
}

absl::StatusOr<std::vector<SweepMask>> Expand(
    const std::vector<v1::MaskSpec>& specs) {
  google::protobuf::RepeatedPtrField<v1::MaskSpec> field(specs.begin(),
                                                         specs.end());
  return ExpandMaskSpecs(field, Options());
}

void ExpectInvalid(const absl::StatusOr<std::vector<SweepMask>>& masks,
                   const std::string& text) {
  ASSERT_FALSE(masks.ok()) << "expected an error with " << text;
  EXPECT_EQ(masks.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(masks.status().message(), HasSubstr(text));
}

TEST(ExpandMaskSpecsTest, RandomIdsCarrySeedAndHeadCount) {
  auto masks = Expand({Random(0.5, 2, 7), Random(0.5, 1, 8)});
  ASSERT_TRUE(masks.ok()) << masks.status();
  ASSERT_EQ(masks->size(), 3u);
  EXPECT_EQ((*masks)[0].id, "random-L0-3-k6-s7-r0");
  EXPECT_EQ((*masks)[1].id, "random-L0-3-k6-s7-r1");
  EXPECT_EQ((*masks)[2].id, "random-L0-3-k6-s8-r0");
}

TEST(ExpandMaskSpecsTest, RefusesRepeatedExplicitIds) {
  ExpectInvalid(
      Expand({Explicit("a"), Explicit("x"), Explicit("b"), Explicit("x")}),
      "masks[3].explicit_mask.id \"x\" repeats masks[1]");
}

TEST(ExpandMaskSpecsTest, RefusesRepeatsAfterExpansion) {
  v1::MaskSpec heads;
  heads.mutable_all_single_heads();
  v1::MaskSpec layers;
  layers.mutable_all_layers();
  // A generator given twice.
  ExpectInvalid(Expand({heads, layers, heads}),
                "masks[2].all_single_heads: id \"head-L0H0\" repeats masks[0]");
  // An explicit id equal to a generated one.
  ExpectInvalid(Expand({layers, Explicit("layer-2")}),
                "masks[1].explicit_mask.id \"layer-2\" repeats masks[0]");
  // The same random draws twice (the rounded fraction picks the same k).
  ExpectInvalid(
      Expand({Random(0.5, 2, 7), Random(0.52, 1, 7)}),
      "masks[1].random: id \"random-L0-3-k6-s7-r0\" repeats masks[0]");
  // An explicit id equal to another's default ("mask-{index}").
  ExpectInvalid(Expand({Explicit(""), Explicit("mask-0")}),
                "masks[1].explicit_mask.id \"mask-0\" repeats masks[0]");
  v1::MaskSpec keep;
  keep.mutable_keep_only()->set_id("x");
  keep.mutable_keep_only()->set_layer_end(1);
  ExpectInvalid(Expand({Explicit("x"), keep}),
                "masks[1].keep_only.id \"x\" repeats masks[0]");
  // Different draws are different masks.
  EXPECT_TRUE(Expand({Random(0.5, 1, 7), Random(0.25, 1, 7), heads}).ok());
}

TEST(ExpandMaskSpecsTest, RefusesKeptHeadsOutsideTheLayerRange) {
  v1::MaskSpec keep;
  keep.mutable_keep_only()->set_layer_begin(0);
  keep.mutable_keep_only()->set_layer_end(2);
  v1::LayerHead* in = keep.mutable_keep_only()->add_keep();
  in->set_layer(1);
  in->set_head(3);
  v1::LayerHead* out = keep.mutable_keep_only()->add_keep();
  out->set_layer(2);
  out->set_head(0);
  ExpectInvalid(Expand({keep}),
                "masks[0].keep_only.keep[1]=L2H0 is outside layers [0, 2)");
  keep.mutable_keep_only()->mutable_keep()->RemoveLast();
  auto masks = Expand({keep});
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[0].mask.AffectedHeads().size(), 7u);
}

}  // namespace
}  // namespace bertology
