#include "server/core/checkpoint/bert_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bertology {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] = R"({
  "architectures": ["BertForSequenceClassification"],
  "vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 64,
  "hidden_act": "gelu_new", "layer_norm_eps": 1e-5,
  "max_position_embeddings": 64, "type_vocab_size": 1, "pad_token_id": 1,
  "id2label": {"1": "pos", "0": "neg"}
})";

TEST(BertConfigTest, ParsesAllFields) {
  auto c = BertConfig::FromJson(kGood, "x/config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->vocab_size, 30);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_hidden_layers, 2);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->intermediate_size, 64);
  EXPECT_EQ(c->hidden_act, "gelu_new");
  EXPECT_DOUBLE_EQ(c->layer_norm_eps, 1e-5);
  EXPECT_EQ(c->max_position_embeddings, 64);
  EXPECT_EQ(c->type_vocab_size, 1);
  EXPECT_EQ(c->pad_token_id, 1);
  EXPECT_EQ(c->id2label, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(c->architecture, "BertForSequenceClassification");
  EXPECT_EQ(c->head_size(), 8);
  EXPECT_EQ(c->num_heads_total(), 8);
}

TEST(BertConfigTest, ToJsonRoundTrips) {
  auto c = BertConfig::FromJson(kGood, "config.json");
  ASSERT_TRUE(c.ok());
  auto again = BertConfig::FromJson(c->ToJson(), "round.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id2label, c->id2label);
  EXPECT_EQ(again->hidden_act, c->hidden_act);
  EXPECT_DOUBLE_EQ(again->layer_norm_eps, c->layer_norm_eps);
  EXPECT_EQ(again->type_vocab_size, c->type_vocab_size);
  EXPECT_EQ(again->architecture, c->architecture);
}

struct BadCase {
  const char* json;
  const char* fault;
};

class BertConfigBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BertConfigBadTest, ErrorNamesFileAndField) {
  auto c = BertConfig::FromJson(GetParam().json, "m/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("m/config.json"));
  EXPECT_THAT(c.status().message(), HasSubstr(GetParam().fault));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BertConfigBadTest,
    ::testing::Values(
        BadCase{"{not json", "not a JSON object"},
        BadCase{R"({"vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 5, "intermediate_size": 64})",
                "num_attention_heads=5 does not divide hidden_size=32"},
        BadCase{R"({"vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 0,
            "num_attention_heads": 4, "intermediate_size": 64})",
                "num_hidden_layers=0"},
        BadCase{R"({"vocab_size": "30"})", "vocab_size must be an integer"},
        BadCase{R"({"hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64})",
                "vocab_size=0"},
        BadCase{R"({"vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64,
            "hidden_act": "swish"})",
                "hidden_act=\"swish\""},
        BadCase{R"({"vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64,
            "id2label": {"0": "a", "2": "b"}})",
                "id2label key \"2\""},
        BadCase{R"({"vocab_size": 30, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64,
            "id2label": {"x": "a"}})",
                "id2label key \"x\""},
        // Other families: refused by model_type before any size is read.
        BadCase{R"({"model_type": "deberta-v2", "vocab_size": 30,
            "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64})",
                "model_type=\"deberta-v2\" is not supported"},
        BadCase{R"({"model_type": "albert", "embedding_size": 16})",
                "model_type=\"albert\" is not supported"},
        BadCase{R"({"model_type": 3})", "model_type=3 is not supported"}));

TEST(BertConfigTest, MissingFileNamed) {
  auto c = BertConfig::FromFile("/nonexistent/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/config.json"));
}

TEST(BertConfigTest, DistilBertReadsItsOwnFieldNames) {
  auto c = BertConfig::FromJson(
      R"({"model_type": "distilbert", "vocab_size": 30, "dim": 32,
          "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "activation": "relu", "max_position_embeddings": 64,
          "layer_norm_eps": 0.5})",
      "d/config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, ModelFamily::kDistilBert);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_hidden_layers, 2);
  EXPECT_EQ(c->num_attention_heads, 4);
  EXPECT_EQ(c->intermediate_size, 64);
  EXPECT_EQ(c->hidden_act, "relu");
  EXPECT_EQ(c->type_vocab_size, 0);
  EXPECT_EQ(c->layer_norm_eps, 1e-12);  // fixed in DistilBERT's code
  EXPECT_EQ(c->embedding_size, 32);
}

TEST(BertConfigTest, RobertaPositionsStartAfterPadding) {
  auto c = BertConfig::FromJson(
      R"({"model_type": "roberta", "vocab_size": 30, "hidden_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 16, "max_position_embeddings": 514,
          "type_vocab_size": 1, "pad_token_id": 1})",
      "r/config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->family, ModelFamily::kRoberta);
  EXPECT_EQ(c->max_input_tokens(), 512);
}

TEST(BertConfigTest, ElectraEmbeddingSize) {
  auto c = BertConfig::FromJson(
      R"({"model_type": "electra", "vocab_size": 30, "hidden_size": 8,
          "embedding_size": 4, "num_hidden_layers": 1,
          "num_attention_heads": 2, "intermediate_size": 16})",
      "e/config.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->embedding_size, 4);
  EXPECT_EQ(c->hidden_size, 8);
  EXPECT_EQ(c->max_input_tokens(), 512);
}

}  // namespace
}  // namespace bertology
