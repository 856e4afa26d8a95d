#include "client/scheduler/mask_plan.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

MaskPlanOptions Shape(int layers, int heads) {
  MaskPlanOptions o;
  o.layers = layers;
  o.heads = heads;
  return o;
}

TEST(MaskPlanTest, ExpandsHeadsAndLayersWithServerIds) {
  std::vector<v1::MaskSpec> specs(2);
  specs[0].mutable_all_single_heads();
  specs[1].mutable_all_layers();
  auto masks = PlanMasks(specs, Shape(2, 3));
  ASSERT_TRUE(masks.ok()) << masks.status();
  ASSERT_EQ(masks->size(), 6u + 2u);
  EXPECT_EQ((*masks)[0].id, "head-L0H0");
  EXPECT_EQ((*masks)[5].id, "head-L1H2");
  EXPECT_EQ((*masks)[6].id, "layer-0");
  EXPECT_EQ((*masks)[7].wire.explicit_mask().mask().ablate().heads_size(), 3);
  EXPECT_EQ((*masks)[7].wire.explicit_mask().id(), "layer-1");
  EXPECT_EQ((*masks)[7].spec, "ablate all 3 heads of layer 1 (zero)");
}

TEST(MaskPlanTest, RandomIsDeterministicDistinctAndInRange) {
  std::vector<v1::MaskSpec> specs(1);
  auto* r = specs[0].mutable_random();
  r->set_fraction(0.5);
  r->set_repeats(4);
  r->set_seed(7);
  r->set_layer_begin(1);
  r->set_layer_end(3);
  auto a = PlanMasks(specs, Shape(4, 2));
  auto b = PlanMasks(specs, Shape(4, 2));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 4u);
  EXPECT_EQ((*a)[0].id, "random-L1-3-k2-s7-r0");
  for (size_t i = 0; i < a->size(); ++i) {
    const auto& heads = (*a)[i].wire.explicit_mask().mask().ablate().heads();
    ASSERT_EQ(heads.size(), 2);  // round(0.5 * 4)
    std::set<std::pair<int, int>> distinct;
    for (const auto& lh : heads) {
      EXPECT_GE(lh.layer(), 1);
      EXPECT_LT(lh.layer(), 3);
      distinct.insert({lh.layer(), lh.head()});
    }
    EXPECT_EQ(distinct.size(), 2u);
    EXPECT_EQ((*a)[i].wire.SerializeAsString(),
              (*b)[i].wire.SerializeAsString());
  }
}

TEST(MaskPlanTest, KeepsExplicitAndKeepOnlyWithDefaultIds) {
  std::vector<v1::MaskSpec> specs(2);
  specs[0].mutable_explicit_mask()->mutable_mask()->mutable_ablate();
  specs[1].mutable_keep_only()->set_layer_end(1);
  auto masks = PlanMasks(specs, Shape(2, 2));
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[0].id, "mask-0");
  EXPECT_EQ((*masks)[1].id, "keep-1");
  EXPECT_EQ((*masks)[1].wire.keep_only().id(), "keep-1");
}

TEST(MaskPlanTest, RefusesBadSpecs) {
  std::vector<v1::MaskSpec> specs(1);
  specs[0].mutable_random()->set_fraction(0.01);
  specs[0].mutable_random()->set_repeats(1);
  EXPECT_FALSE(PlanMasks(specs, Shape(2, 2)).ok());  // rounds to 0 heads
  specs[0].mutable_random()->set_fraction(1.5);
  EXPECT_FALSE(PlanMasks(specs, Shape(2, 2)).ok());
  EXPECT_FALSE(PlanMasks({v1::MaskSpec()}, Shape(2, 2)).ok());
  EXPECT_FALSE(PlanMasks({}, Shape(2, 2)).ok());
}

v1::MaskSpec ExplicitSpec(const std::string& id) {
  v1::MaskSpec spec;
  spec.mutable_explicit_mask()->set_id(id);
  spec.mutable_explicit_mask()->mutable_mask()->mutable_ablate();
  return spec;
}

v1::MaskSpec RandomSpec(double fraction, int repeats, uint64_t seed) {
  v1::MaskSpec spec;
  spec.mutable_random()->set_fraction(fraction);
  spec.mutable_random()->set_repeats(repeats);
  spec.mutable_random()->set_seed(seed);
  return spec;
}

void ExpectRefused(const std::vector<v1::MaskSpec>& specs,
                   const std::string& message) {
  auto masks = PlanMasks(specs, Shape(2, 3));
  ASSERT_FALSE(masks.ok()) << "expected: " << message;
  EXPECT_EQ(masks.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(masks.status().message(), message);
}

TEST(MaskPlanTest, RandomIdsTellSeedsAndHeadCountsApart) {
  auto masks = PlanMasks(
      {RandomSpec(0.5, 1, 1), RandomSpec(0.5, 1, 2), RandomSpec(0.34, 1, 1)},
      Shape(2, 3));
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[0].id, "random-L0-2-k3-s1-r0");
  EXPECT_EQ((*masks)[1].id, "random-L0-2-k3-s2-r0");
  EXPECT_EQ((*masks)[2].id, "random-L0-2-k2-s1-r0");
}

TEST(MaskPlanTest, RefusesRepeatedIds) {
  ExpectRefused({ExplicitSpec("a"), ExplicitSpec("x"), ExplicitSpec("b"),
                 ExplicitSpec("x")},
                "masks[3].explicit_mask.id \"x\" repeats masks[1]");
  v1::MaskSpec layers;
  layers.mutable_all_layers();
  ExpectRefused({layers, layers},
                "masks[1].all_layers: id \"layer-0\" repeats masks[0]");
  ExpectRefused({layers, ExplicitSpec("layer-1")},
                "masks[1].explicit_mask.id \"layer-1\" repeats masks[0]");
  // 0.5 and 0.45 of 6 heads both draw 3: the same masks.
  ExpectRefused(
      {RandomSpec(0.5, 2, 7), RandomSpec(0.45, 3, 7)},
      "masks[1].random: id \"random-L0-2-k3-s7-r0\" repeats masks[0]");
  v1::MaskSpec keep;
  keep.mutable_keep_only()->set_layer_end(1);
  ExpectRefused({keep, ExplicitSpec("keep-0")},
                "masks[1].explicit_mask.id \"keep-0\" repeats masks[0]");
}

TEST(MaskPlanTest, RefusesKeptHeadsOutsideTheLayerRange) {
  v1::MaskSpec keep;
  keep.mutable_keep_only()->set_layer_begin(1);
  keep.mutable_keep_only()->set_layer_end(2);
  v1::LayerHead* h = keep.mutable_keep_only()->add_keep();
  h->set_layer(0);
  h->set_head(2);
  ExpectRefused({keep},
                "masks[0].keep_only.keep[0]=L0H2 is outside layers [1, 2)");
  h->set_layer(1);
  EXPECT_TRUE(PlanMasks({keep}, Shape(2, 3)).ok());
}

TEST(MaskPlanTest, DenseMasksNameTheirScaledHeads) {
  v1::MaskSpec spec = ExplicitSpec("half");
  v1::DenseMask* dense =
      spec.mutable_explicit_mask()->mutable_mask()->mutable_dense();
  for (float v : {1.0f, 0.5f, 0.0f, 1.0f, 1.0f, 0.25f}) dense->add_values(v);
  auto masks = PlanMasks({spec, ExplicitSpec("list")}, Shape(2, 3));
  ASSERT_TRUE(masks.ok()) << masks.status();
  EXPECT_EQ((*masks)[0].scaled,
            (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}}));
  EXPECT_TRUE((*masks)[1].scaled.empty());
}

}  // namespace
}  // namespace client
}  // namespace bertology
