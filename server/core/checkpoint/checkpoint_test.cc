// Checkpoint::Load on directories built here (every malformed case), on
// torch.save output from the fixture script, and on the shared tiny model.
#include "server/core/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server/core/checkpoint/checkpoint_fixtures_for_tests.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr char kConfig[] = R"({
  "vocab_size": 10, "hidden_size": 4, "num_hidden_layers": 1,
  "num_attention_heads": 2, "intermediate_size": 6,
  "max_position_embeddings": 5, "type_vocab_size": 2,
  "id2label": {"0": "no", "1": "yes"}
})";

// Weights matching kConfig, keys as HF's BertForSequenceClassification.
StateDict GoodWeights() {
  StateDict w;
  auto add = [&](const std::string& k, std::vector<int64_t> shape) {
    w[k] = torch::randn(shape);
  };
  add("bert.embeddings.word_embeddings.weight", {10, 4});
  add("bert.embeddings.position_embeddings.weight", {5, 4});
  add("bert.embeddings.token_type_embeddings.weight", {2, 4});
  add("bert.embeddings.LayerNorm.weight", {4});
  add("bert.embeddings.LayerNorm.bias", {4});
  const std::string p = "bert.encoder.layer.0.";
  for (const char* n : {"attention.self.query", "attention.self.key",
                        "attention.self.value", "attention.output.dense"}) {
    add(p + n + ".weight", {4, 4});
    add(p + n + ".bias", {4});
  }
  add(p + "intermediate.dense.weight", {6, 4});
  add(p + "intermediate.dense.bias", {6});
  add(p + "output.dense.weight", {4, 6});
  add(p + "output.dense.bias", {4});
  for (const char* n : {"attention.output.LayerNorm", "output.LayerNorm"}) {
    add(p + n + ".weight", {4});
    add(p + n + ".bias", {4});
  }
  add("bert.pooler.dense.weight", {4, 4});
  add("bert.pooler.dense.bias", {4});
  add("classifier.weight", {2, 4});
  add("classifier.bias", {2});
  w["bert.embeddings.position_ids"] = torch::arange(5).unsqueeze(0);
  return w;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/ckpt_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Write("config.json", kConfig);
    Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
    ASSERT_TRUE(
        WriteSafetensors(GoodWeights(), dir_ + "/model.safetensors").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  void ExpectError(const std::string& file, const std::string& fault) {
    auto c = Checkpoint::Load(dir_);
    ASSERT_FALSE(c.ok()) << "expected: " << fault;
    EXPECT_THAT(c.status().message(), HasSubstr(file));
    EXPECT_THAT(c.status().message(), HasSubstr(fault));
  }
  std::string dir_;
};

TEST_F(CheckpointTest, LoadsGoodDirectory) {
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.kind, HeadKind::kSequenceClassification);
  EXPECT_EQ(c->head.architecture, "BertForSequenceClassification");
  EXPECT_EQ(c->head.num_labels, 2);
  EXPECT_TRUE(c->head.unused_keys.empty());
  EXPECT_EQ(c->weights_dtype, "F32");
  EXPECT_EQ(c->weights_file, dir_ + "/model.safetensors");
  EXPECT_EQ(c->vocab_file, dir_ + "/vocab.txt");
  EXPECT_TRUE(c->tokenizer.do_lower_case);
  EXPECT_EQ(c->config.id2label, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(c->weights.count("bert.embeddings.position_ids"), 0u);
}

TEST_F(CheckpointTest, KeysWithoutBertPrefixAndGammaBeta) {
  StateDict bare;
  for (auto& [k, v] : GoodWeights()) {
    std::string key = k.rfind("bert.", 0) == 0 ? k.substr(5) : k;
    key = absl::StrReplaceAll(key, {{"LayerNorm.weight", "LayerNorm.gamma"},
                                    {"LayerNorm.bias", "LayerNorm.beta"}});
    bare[key] = v;
  }
  ASSERT_TRUE(WriteSafetensors(bare, dir_ + "/model.safetensors").ok());
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->weights.count("bert.encoder.layer.0.output.LayerNorm.weight"),
            1u);
  EXPECT_TRUE(torch::equal(c->weights.at("bert.embeddings.LayerNorm.bias"),
                           bare.at("embeddings.LayerNorm.beta")));
}

TEST_F(CheckpointTest, NoClassifierSynthesisesNothing) {
  StateDict w = GoodWeights();
  w.erase("classifier.weight");
  w.erase("classifier.bias");
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.kind, HeadKind::kEncoder);
  EXPECT_EQ(c->head.architecture, "BertModel");
  // The pooler is loaded by nothing here: listed, not an error.
  EXPECT_EQ(c->head.unused_keys,
            (std::vector<std::string>{"bert.pooler.dense.bias",
                                      "bert.pooler.dense.weight"}));
}

TEST_F(CheckpointTest, ClassifierWithoutId2LabelGetsLabelNames) {
  Write("config.json",
        absl::StrReplaceAll(kConfig, {{R"("id2label": {"0": "no", "1": "yes"})",
                                       R"("pad_token_id": 0)"}}));
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config.id2label,
            (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
}

TEST_F(CheckpointTest, Id2LabelDisagreesWithClassifier) {
  Write("config.json",
        absl::StrReplaceAll(kConfig,
                            {{R"("1": "yes")", R"("1": "yes", "2": "x")"}}));
  ExpectError("config.json", "id2label has 3 labels");
}

TEST_F(CheckpointTest, F16WeightsReportDtype) {
  StateDict w = GoodWeights();
  for (auto& [k, v] : w) {
    if (v.is_floating_point()) v = v.to(torch::kHalf);
  }
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->weights_dtype, "F16");
}

TEST_F(CheckpointTest, TokenizerConfigCased) {
  Write("tokenizer_config.json", R"({"do_lower_case": false})");
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->tokenizer.do_lower_case);
}

TEST_F(CheckpointTest, MissingDirectory) {
  auto c = Checkpoint::Load(dir_ + "/nope");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr(dir_ + "/nope"));
  EXPECT_THAT(c.status().message(), HasSubstr("does not exist"));
}

TEST_F(CheckpointTest, MissingConfig) {
  fs::remove(dir_ + "/config.json");
  ExpectError("config.json", "missing");
}

TEST_F(CheckpointTest, BadConfigField) {
  Write("config.json",
        absl::StrReplaceAll(kConfig, {{R"("num_attention_heads": 2)",
                                       R"("num_attention_heads": 3)"}}));
  ExpectError("config.json",
              "num_attention_heads=3 does not divide hidden_size=4");
}

TEST_F(CheckpointTest, MissingWeights) {
  fs::remove(dir_ + "/model.safetensors");
  ExpectError(dir_, "looked for model.safetensors and pytorch_model.bin");
}

TEST_F(CheckpointTest, TruncatedSafetensors) {
  fs::resize_file(dir_ + "/model.safetensors", 5);
  ExpectError("model.safetensors", "file too short");
}

TEST_F(CheckpointTest, TruncatedData) {
  const auto size = fs::file_size(dir_ + "/model.safetensors");
  fs::resize_file(dir_ + "/model.safetensors", size - 16);
  ExpectError("model.safetensors", "outside the data section");
}

TEST_F(CheckpointTest, MissingKey) {
  StateDict w = GoodWeights();
  w.erase("bert.encoder.layer.0.attention.self.key.bias");
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  ExpectError("model.safetensors",
              "missing key bert.encoder.layer.0.attention.self.key.bias "
              "(expected shape [4])");
}

TEST_F(CheckpointTest, WrongShape) {
  StateDict w = GoodWeights();
  w["bert.encoder.layer.0.intermediate.dense.weight"] = torch::zeros({4, 6});
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  ExpectError("model.safetensors",
              "key bert.encoder.layer.0.intermediate.dense.weight has shape "
              "[4, 6], expected [6, 4]");
}

TEST_F(CheckpointTest, SequenceClassifierWithoutPooler) {
  Write("config.json",
        absl::StrReplaceAll(
            kConfig,
            {{"{\n",
              R"({"architectures": ["BertForSequenceClassification"],)"}}));
  StateDict w = GoodWeights();
  w.erase("bert.pooler.dense.weight");
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  ExpectError("model.safetensors",
              "missing key bert.pooler.dense.weight (expected shape [4, 4])");
}

TEST_F(CheckpointTest, ClassifierWithoutPoolerIsTokenClassifier) {
  // No architectures in the config: the keys decide.
  StateDict w = GoodWeights();
  w.erase("bert.pooler.dense.weight");
  w.erase("bert.pooler.dense.bias");
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.kind, HeadKind::kTokenClassification);
  EXPECT_EQ(c->head.architecture, "BertForTokenClassification");
  EXPECT_EQ(c->head.num_labels, 2);
}

TEST_F(CheckpointTest, TokenClassifierMissingClassifier) {
  Write("config.json",
        absl::StrReplaceAll(
            kConfig,
            {{"{\n", R"({"architectures": ["BertForTokenClassification"],)"}}));
  StateDict w = GoodWeights();
  w.erase("classifier.weight");
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  ExpectError("model.safetensors",
              "missing key classifier.weight (expected shape [2, 4])");
}

TEST_F(CheckpointTest, OtherHeadsKeysAreSkipped) {
  Write(
      "config.json",
      absl::StrReplaceAll(
          kConfig, {{"{\n", R"({"architectures": ["BertForPreTraining"],)"}}));
  StateDict w = GoodWeights();
  w.erase("classifier.weight");
  w.erase("classifier.bias");
  w["cls.predictions.bias"] = torch::zeros({10});
  w["cls.seq_relationship.weight"] = torch::zeros({2, 4});
  ASSERT_TRUE(WriteSafetensors(w, dir_ + "/model.safetensors").ok());
  auto c = Checkpoint::Load(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.kind, HeadKind::kEncoder);
  EXPECT_EQ(c->head.architecture, "BertForPreTraining");
  EXPECT_EQ(c->head.unused_keys,
            (std::vector<std::string>{
                "bert.pooler.dense.bias", "bert.pooler.dense.weight",
                "cls.predictions.bias", "cls.seq_relationship.weight"}));
}

TEST_F(CheckpointTest, UnknownArchitectureRefused) {
  Write(
      "config.json",
      absl::StrReplaceAll(
          kConfig, {{"{\n", R"({"architectures": ["RobertaForMaskedLM"],)"}}));
  ExpectError("config.json", "RobertaForMaskedLM");
}

TEST_F(CheckpointTest, VocabWithoutCls) {
  Write("vocab.txt", "[PAD]\n[UNK]\n[SEP]\n");
  ExpectError("vocab.txt", "[CLS]");
}

TEST_F(CheckpointTest, MissingVocab) {
  fs::remove(dir_ + "/vocab.txt");
  ExpectError("vocab.txt", "missing");
}

// --- torch.save output, via tests/fixtures/make_checkpoint_fixtures.py ---

TEST(CheckpointTorchSaveTest, BinLoadsAndEqualsSafetensors) {
  std::string why;
  const std::string fx = MakeCheckpointFixtures(&why);
  if (fx.empty()) GTEST_SKIP() << why;
  for (const char* tag : {"f32", "f16", "bf16"}) {
    auto bin = Checkpoint::Load(fx + "/bin_" + tag);
    auto st = Checkpoint::Load(fx + "/st_" + tag);
    ASSERT_TRUE(bin.ok()) << bin.status();
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_EQ(bin->weights_file, fx + "/bin_" + tag + "/pytorch_model.bin");
    EXPECT_EQ(bin->weights_dtype, st->weights_dtype);
    EXPECT_EQ(bin->head.kind, HeadKind::kSequenceClassification);
    EXPECT_EQ(bin->config.id2label,
              (std::vector<std::string>{"negative", "positive"}));
    ASSERT_EQ(bin->weights.size(), st->weights.size());
    for (const auto& [k, v] : st->weights) {
      EXPECT_TRUE(torch::equal(bin->weights.at(k), v)) << tag << " " << k;
    }
  }
}

TEST(CheckpointTorchSaveTest, LegacyBinRefused) {
  std::string why;
  const std::string fx = MakeCheckpointFixtures(&why);
  if (fx.empty()) GTEST_SKIP() << why;
  auto c = Checkpoint::Load(fx + "/legacy_bin");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("pytorch_model.bin"));
  EXPECT_THAT(c.status().message(), HasSubstr("PyTorch >= 1.6"));
  // The one-line conversion, with this file's path in it.
  EXPECT_THAT(c.status().message(),
              HasSubstr("torch.save(torch.load(p, map_location='cpu'), p)"));
  EXPECT_THAT(c.status().message(),
              HasSubstr("p='" + fx + "/legacy_bin/pytorch_model.bin'"));
}

TEST(CheckpointSharedTest, TinyBertWithoutClassifier) {
  const char* shared = std::getenv("BERTOLOGY_SHARED_DIR");
  const std::string dir = std::string(shared ? shared : "") +
                          "/fixtures/checkpoints/tiny-bert-safetensors";
  if (!shared || !fs::exists(dir)) {
    GTEST_SKIP() << "shared fixture absent: " << dir;
  }
  auto c = Checkpoint::Load(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head.kind, HeadKind::kEncoder);
  EXPECT_EQ(c->weights_dtype, "F32");
  EXPECT_FALSE(c->tokenizer.do_lower_case);
  EXPECT_EQ(c->config.num_hidden_layers, 2);
  EXPECT_TRUE(c->config.id2label.empty());
  EXPECT_EQ(c->weights.count("bert.encoder.layer.1.output.dense.weight"), 1u);
}

}  // namespace
}  // namespace bertology
