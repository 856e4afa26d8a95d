#include "server/service/request_validation.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace bertology
