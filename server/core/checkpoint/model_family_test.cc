// Each family's HF key names to the one module tree's and back.
#include "server/core/checkpoint/model_family.h"

#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace {

struct Case {
  ModelFamily family;
  const char* file;
  const char* internal;
  bool sequence_head;
};

TEST(ModelFamilyTest, KeysMapBothWays) {
  const Case cases[] = {
      {ModelFamily::kBert, "bert.encoder.layer.0.attention.self.query.weight",
       "bert.encoder.layer.0.attention.self.query.weight", true},
      {ModelFamily::kRoberta, "roberta.embeddings.position_embeddings.weight",
       "bert.embeddings.position_embeddings.weight", true},
      {ModelFamily::kRoberta, "classifier.dense.weight",
       "bert.pooler.dense.weight", true},
      {ModelFamily::kRoberta, "classifier.out_proj.bias", "classifier.bias",
       true},
      {ModelFamily::kXlmRoberta, "classifier.weight", "classifier.weight",
       false},
      {ModelFamily::kRoberta, "roberta.pooler.dense.weight",
       "roberta.pooler.dense.weight", false},
      {ModelFamily::kDistilBert,
       "distilbert.transformer.layer.11.attention.q_lin.weight",
       "bert.encoder.layer.11.attention.self.query.weight", true},
      {ModelFamily::kDistilBert,
       "distilbert.transformer.layer.0.attention.out_lin.bias",
       "bert.encoder.layer.0.attention.output.dense.bias", true},
      {ModelFamily::kDistilBert,
       "distilbert.transformer.layer.1.sa_layer_norm.weight",
       "bert.encoder.layer.1.attention.output.LayerNorm.weight", true},
      {ModelFamily::kDistilBert,
       "distilbert.transformer.layer.1.ffn.lin1.weight",
       "bert.encoder.layer.1.intermediate.dense.weight", true},
      {ModelFamily::kDistilBert, "distilbert.transformer.layer.1.ffn.lin2.bias",
       "bert.encoder.layer.1.output.dense.bias", true},
      {ModelFamily::kDistilBert,
       "distilbert.transformer.layer.1.output_layer_norm.bias",
       "bert.encoder.layer.1.output.LayerNorm.bias", true},
      {ModelFamily::kDistilBert, "pre_classifier.weight",
       "bert.pooler.dense.weight", true},
      {ModelFamily::kElectra, "electra.embeddings_project.weight",
       "bert.embeddings.project.weight", true},
      {ModelFamily::kElectra, "electra.encoder.layer.3.output.dense.weight",
       "bert.encoder.layer.3.output.dense.weight", true},
      {ModelFamily::kElectra, "classifier.out_proj.weight", "classifier.weight",
       true},
      {ModelFamily::kElectra, "discriminator_predictions.dense.weight",
       "discriminator_predictions.dense.weight", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToInternalKey(c.family, c.file), c.internal) << c.file;
    EXPECT_EQ(ToFileKey(c.family, c.internal, c.sequence_head), c.file)
        << c.internal;
  }
}

TEST(ModelFamilyTest, BaseModelSavesGetTheFamilyPrefix) {
  EXPECT_EQ(
      ToInternalKey(ModelFamily::kRoberta, "encoder.layer.0.output.dense.bias"),
      "bert.encoder.layer.0.output.dense.bias");
  EXPECT_EQ(ToInternalKey(ModelFamily::kDistilBert,
                          "transformer.layer.0.attention.k_lin.weight"),
            "bert.encoder.layer.0.attention.self.key.weight");
  EXPECT_EQ(ToInternalKey(ModelFamily::kElectra, "embeddings_project.bias"),
            "bert.embeddings.project.bias");
  EXPECT_EQ(ToInternalKey(ModelFamily::kBert, "pooler.dense.weight"),
            "bert.pooler.dense.weight");
}

TEST(ModelFamilyTest, ModelTypesRoundTrip) {
  for (ModelFamily f :
       {ModelFamily::kBert, ModelFamily::kRoberta, ModelFamily::kXlmRoberta,
        ModelFamily::kDistilBert, ModelFamily::kElectra}) {
    EXPECT_EQ(FamilyFromModelType(ModelTypeName(f)), f);
  }
  EXPECT_FALSE(FamilyFromModelType("deberta-v2").has_value());
  EXPECT_FALSE(FamilyFromModelType("albert").has_value());
  EXPECT_TRUE(UsesPaddingOffsetPositions(ModelFamily::kXlmRoberta));
  EXPECT_FALSE(UsesPaddingOffsetPositions(ModelFamily::kElectra));
}

}  // namespace
}  // namespace bertology
