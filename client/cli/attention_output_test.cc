#include "client/cli/attention_output.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

std::string LeBytes(std::initializer_list<uint32_t> words, int width) {
  std::string out;
  for (uint32_t w : words) {
    for (int i = 0; i < width; ++i)
      out.push_back(static_cast<char>(w >> (8 * i)));
  }
  return out;
}

TEST(DecodeAttentionMap, Float32AndFloat16) {
  // 1.0, 0.25, 0.5, 0.0 as binary32 and binary16.
  auto f32 =
      DecodeAttentionMap(LeBytes({0x3f800000, 0x3e800000, 0x3f000000, 0}, 4), 2,
                         v1::ATTENTION_ENCODING_FLOAT32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(*f32, (std::vector<float>{1.0f, 0.25f, 0.5f, 0.0f}));
  auto f16 = DecodeAttentionMap(LeBytes({0x3c00, 0x3400, 0x3800, 0}, 2), 2,
                                v1::ATTENTION_ENCODING_FLOAT16);
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(*f16, *f32);
  // UNSPECIFIED is FLOAT32 on the wire.
  EXPECT_TRUE(DecodeAttentionMap(LeBytes({0, 0, 0, 0}, 4), 2,
                                 v1::ATTENTION_ENCODING_UNSPECIFIED)
                  .ok());
}

TEST(DecodeAttentionMap, WrongSizeIsDataLoss) {
  auto r = DecodeAttentionMap(std::string(6, '\0'), 2,
                              v1::ATTENTION_ENCODING_FLOAT16);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

v1::GetAttentionResponse TwoTokenResponse() {
  v1::GetAttentionResponse r;
  r.set_model("tiny");
  r.set_size(2);
  r.set_encoding(v1::ATTENTION_ENCODING_FLOAT16);
  for (const char* t : {"[CLS]", "héllo"}) r.add_units()->set_text(t);
  r.mutable_units(1)->set_segment(0);
  v1::AttentionMap* m = r.add_maps();
  m->set_layer(1);
  m->set_head(2);
  m->set_data(LeBytes({0x3c00, 0, 0x3800, 0x3800}, 2));
  r.mutable_prediction()->set_label(1);
  r.mutable_prediction()->set_label_name("positive");
  r.mutable_prediction()->add_probabilities(0.25f);
  r.mutable_prediction()->add_probabilities(0.75f);
  return r;
}

TEST(AttentionOutput, JsonHasNestedRows) {
  auto json = AttentionJson(TwoTokenResponse());
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["size"], 2);
  EXPECT_EQ((*json)["units"][1]["text"], "héllo");
  EXPECT_EQ((*json)["maps"][0]["layer"], 1);
  EXPECT_EQ((*json)["maps"][0]["attention"][1][0], 0.5);
  EXPECT_EQ((*json)["prediction"]["label_name"], "positive");
}

TEST(AttentionOutput, ToAttentionDataIsValid) {
  v1::TextInput input;
  input.set_text_a("héllo");
  input.set_text_b("world");
  auto data = ToAttentionData(TwoTokenResponse(), input);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->tokens, (std::vector<std::string>{"[CLS]", "héllo"}));
  ASSERT_EQ(data->maps.size(), 1u);
  EXPECT_EQ(data->maps[0].weights, (std::vector<float>{1, 0, 0.5, 0.5}));
  EXPECT_NE(data->title.find("héllo | world"), std::string::npos);
  EXPECT_NE(data->prediction.find("positive"), std::string::npos);
  EXPECT_NE(data->prediction.find("0.750"), std::string::npos);
  EXPECT_TRUE(render::ValidateAttentionData(*data).ok());
}

TEST(AttentionOutput, MalformedMapIsDataLoss) {
  v1::GetAttentionResponse r = TwoTokenResponse();
  r.mutable_maps(0)->set_data("abc");
  EXPECT_EQ(AttentionJson(r).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ToAttentionData(r, {}).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace client
}  // namespace bertology
