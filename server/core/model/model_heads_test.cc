// Model with the heads other than the sequence classifier, built from the
// golden model's weights: the encoder alone (no logits), the token
// classifier ([B, T, C] logits, never the [CLS]-only last layer), and what
// Forward refuses for them. The numbers against HF's layout and the float64
// reference are tests/python/test_heads.py's, through the real server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "server/core/checkpoint/checkpoint.h"
#include "server/core/model/engine.h"
#include "server/core/model/model.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string GoldenModelDir() {
  const char* dir = std::getenv("BERTOLOGY_SOURCE_DIR");
  return std::string(dir != nullptr ? dir : ".") +
         "/tests/golden/tiny-bert-cls";
}

// A copy of the golden model saved as `architecture`, with `drop` keys
// removed from its weights.
class HeadDir {
 public:
  HeadDir(const std::string& architecture,
          const std::vector<std::string>& drop) {
    std::string tmpl = ::testing::TempDir() + "/heads_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir_ = tmpl;
    const std::string src = GoldenModelDir();
    for (const char* f : {"vocab.txt", "tokenizer_config.json"}) {
      fs::copy_file(src + "/" + f, dir_ + "/" + f);
    }
    std::ifstream in(src + "/config.json");
    std::string config((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
    config = absl::StrReplaceAll(
        config, {{"BertForSequenceClassification", architecture}});
    std::ofstream(dir_ + "/config.json") << config;
    auto ckpt = Checkpoint::Load(src);
    if (!ckpt.ok()) std::abort();
    for (const std::string& k : drop) ckpt->weights.erase(k);
    if (!WriteSafetensors(ckpt->weights, dir_ + "/model.safetensors").ok()) {
      std::abort();
    }
  }
  ~HeadDir() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

std::unique_ptr<Model> Load(const std::string& dir) {
  ModelOptions options;
  options.dir = dir;
  auto model = Model::Load(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(model).value() : nullptr;
}

Encoding Text(const Model& model, const std::string& text) {
  auto e = model.tokenizer().Encode(text, std::nullopt, 64);
  EXPECT_TRUE(e.ok()) << e.status();
  return *e;
}

TEST(ModelHeadsTest, EncoderOnlyServesAttentionAndRefusesLogits) {
  HeadDir mlm("BertForMaskedLM", {"classifier.weight", "classifier.bias"});
  auto model = Load(mlm.dir());
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->head_kind(), HeadKind::kEncoder);
  EXPECT_EQ(model->architecture(), "BertForMaskedLM");
  EXPECT_FALSE(model->has_classifier());
  // The pooler it does not use is listed, not loaded.
  EXPECT_THAT(model->unused_keys(),
              ::testing::ElementsAre("bert.pooler.dense.bias",
                                     "bert.pooler.dense.weight"));
  const Encoding e = Text(*model, "the cat sat");
  EngineOptions attention;
  attention.compute_logits = false;
  attention.attention_layers = {0, 2};
  auto out = model->Forward({ModelRow{&e, nullptr}}, attention);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->attentions.size(), 2u);
  auto logits = model->Forward({ModelRow{&e, nullptr}}, EngineOptions());
  EXPECT_EQ(logits.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(logits.status().message(), HasSubstr("is a BertForMaskedLM"));
}

TEST(ModelHeadsTest, TokenClassifierLogitsPerPositionWithoutClsShortcut) {
  HeadDir tok("BertForTokenClassification",
              {"bert.pooler.dense.weight", "bert.pooler.dense.bias"});
  auto model = Load(tok.dir());
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->head_kind(), HeadKind::kTokenClassification);
  const Encoding a = Text(*model, "the cat sat on the mat");
  const Encoding b = Text(*model, "a dog");
  EngineOptions full;
  full.cls_only_last_layer = false;
  auto plain = model->Forward({{&a, nullptr}, {&b, nullptr}}, full);
  auto fast = model->Forward({{&a, nullptr}, {&b, nullptr}}, EngineOptions());
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(fast.ok()) << fast.status();
  const int64_t t = static_cast<int64_t>(a.tokens.size());
  EXPECT_EQ(plain->logits.shape, (std::vector<int64_t>{2, t, 3}));
  // The [CLS]-only last layer would leave every other position's logits
  // wrong; the default options must run that layer in full.
  ASSERT_EQ(fast->logits.data.size(), plain->logits.data.size());
  for (size_t i = 0; i < plain->logits.data.size(); ++i) {
    EXPECT_NEAR(fast->logits.data[i], plain->logits.data[i], 1e-6) << i;
  }
  // Positions differ (it is a per-token head, not one row repeated).
  EXPECT_GT(std::abs(plain->logits.data[3] - plain->logits.data[3 * 3]), 1e-4);
}

TEST(ModelHeadsTest, MaskBelowStartLayerIsRefused) {
  auto model = Load(GoldenModelDir());
  ASSERT_NE(model, nullptr);
  const Encoding e = Text(*model, "the cat sat");
  auto input = model->engine().MakeBatch({&e});
  ASSERT_TRUE(input.ok());
  EngineOptions capture;
  capture.capture_hidden = {2};
  auto base = model->engine().Run(*input, {}, capture);
  ASSERT_TRUE(base.ok()) << base.status();
  input->start_hidden = base->hidden.at(2);
  EngineOptions resume;
  resume.start_layer = 2;
  auto below = HeadMask::Ablate(3, 4, {LayerHead{0, 1}}, AblationMode::kZero);
  auto at = HeadMask::Ablate(3, 4, {LayerHead{2, 1}}, AblationMode::kZero);
  ASSERT_TRUE(below.ok() && at.ok());
  auto refused = model->engine().Run(*input, {&*below}, resume);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("rows[0].mask changes layer 0 head 1, below "
                        "start_layer=2"));
  EXPECT_TRUE(model->engine().Run(*input, {&*at}, resume).ok());
}

}  // namespace
}  // namespace bertology
