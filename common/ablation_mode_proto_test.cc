// Every core mode goes to the wire and back unchanged, under its own name;
// the wire's unset and unknown values map to none.
#include "common/ablation_mode_proto.h"

#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(AblationModeProtoTest, RoundTripsEveryMode) {
  for (AblationMode m :
       {AblationMode::kZero, AblationMode::kUniform, AblationMode::kMean,
        AblationMode::kResample, AblationMode::kMeanByRole}) {
    const v1::AblationMode wire = AblationModeToProto(m);
    EXPECT_NE(wire, v1::ABLATION_MODE_UNSPECIFIED) << AblationModeName(m);
    EXPECT_EQ(AblationModeFromProto(wire), m) << AblationModeName(m);
    EXPECT_EQ(AblationModeFromName(AblationModeName(m)), m);
  }
  EXPECT_EQ(AblationModeToProto(AblationMode::kMeanByRole),
            v1::ABLATION_MODE_MEAN_BY_ROLE);
}

TEST(AblationModeProtoTest, UnsetAndUnknownMapToNone) {
  EXPECT_FALSE(AblationModeFromProto(v1::ABLATION_MODE_UNSPECIFIED));
  EXPECT_FALSE(AblationModeFromProto(static_cast<v1::AblationMode>(99)));
  EXPECT_FALSE(AblationModeFromName("median"));
}

}  // namespace
}  // namespace bertology
