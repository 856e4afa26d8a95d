#include "client/scheduler/mask_plan.h"

#include <set>

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
  EXPECT_EQ((*a)[0].id, "random-0.50-L1-3-r0");
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

}  // namespace
}  // namespace client
}  // namespace bertology
