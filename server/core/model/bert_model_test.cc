#include "server/core/model/bert_model.h"

#include <torch/torch.h>

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

BertConfig TinyConfig() {
  BertConfig c;
  c.vocab_size = 30;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 16;
  c.id2label = {"a", "b", "c"};
  return c;
}

std::set<std::string> ParameterNames(torch::nn::Module& m) {
  std::set<std::string> names;
  for (const auto& item : m.named_parameters()) names.insert(item.key());
  return names;
}

TEST(BertModelTest, ParameterNamesAreHfKeys) {
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  std::set<std::string> expected = {
      "bert.embeddings.word_embeddings.weight",
      "bert.embeddings.position_embeddings.weight",
      "bert.embeddings.token_type_embeddings.weight",
      "bert.embeddings.LayerNorm.weight",
      "bert.embeddings.LayerNorm.bias",
      "bert.pooler.dense.weight",
      "bert.pooler.dense.bias",
      "classifier.weight",
      "classifier.bias",
  };
  for (int i = 0; i < 2; ++i) {
    const std::string p = "bert.encoder.layer." + std::to_string(i) + ".";
    for (const char* sub :
         {"attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense", "attention.output.LayerNorm",
          "intermediate.dense", "output.dense", "output.LayerNorm"}) {
      expected.insert(p + sub + ".weight");
      expected.insert(p + sub + ".bias");
    }
  }
  EXPECT_EQ(ParameterNames(model), expected);
  EXPECT_EQ(model.named_parameters()["classifier.weight"].sizes(),
            torch::IntArrayRef({3, 8}));
  EXPECT_EQ(model.named_parameters()["bert.encoder.layer.1.output.dense.weight"]
                .sizes(),
            torch::IntArrayRef({8, 16}));
}

TEST(BertModelTest, PlainBertModelHasNoPoolerOrClassifier) {
  BertForSequenceClassificationImpl model(TinyConfig(), 0);
  EXPECT_FALSE(model.has_classifier());
  for (const std::string& name : ParameterNames(model)) {
    EXPECT_THAT(name, ::testing::Not(HasSubstr("pooler")));
    EXPECT_THAT(name, ::testing::Not(HasSubstr("classifier")));
  }
}

StateDict RandomWeights(BertForSequenceClassificationImpl& model,
                        torch::ScalarType dtype) {
  StateDict w;
  for (const auto& item : model.named_parameters()) {
    w[item.key()] = torch::randn(item.value().sizes()).to(dtype);
  }
  return w;
}

TEST(BertModelTest, LoadStateDictCopiesAndConvertsDtype) {
  torch::manual_seed(1);
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  StateDict w = RandomWeights(model, torch::kBFloat16);
  w["bert.embeddings.position_ids"] = torch::arange(16);  // ignored buffer
  ASSERT_TRUE(LoadStateDict(w, &model).ok());
  for (const auto& item : model.named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(item.value(), w[item.key()].to(torch::kFloat)))
        << item.key();
  }
}

TEST(BertModelTest, LoadStateDictNamesMissingAndMisshapenKeys) {
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  StateDict w = RandomWeights(model, torch::kFloat);
  StateDict missing = w;
  missing.erase("bert.encoder.layer.1.attention.self.key.bias");
  absl::Status s = LoadStateDict(missing, &model);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(),
              HasSubstr("bert.encoder.layer.1.attention.self.key.bias"));

  StateDict wrong = w;
  wrong["classifier.weight"] = torch::zeros({2, 8});
  s = LoadStateDict(wrong, &model);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("classifier.weight has shape [2, 8]"));
  EXPECT_THAT(s.message(), HasSubstr("[3, 8]"));
}

struct Batch {
  torch::Tensor ids, types, mask;
};

Batch TwoRows() {
  // Row 1 has two padding positions.
  Batch b;
  b.ids =
      torch::tensor({{2, 7, 9, 3, 11, 3}, {2, 5, 3, 8, 0, 0}}, torch::kLong);
  b.types =
      torch::tensor({{0, 0, 0, 0, 1, 1}, {0, 0, 0, 1, 0, 0}}, torch::kLong);
  b.mask =
      torch::tensor({{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 0, 0}}, torch::kLong);
  return b;
}

TEST(BertModelTest, MasksEditTheProbabilities) {
  torch::manual_seed(2);
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  model.eval();
  torch::InferenceMode guard;
  Batch b = TwoRows();
  EngineOptions opt;
  opt.attention_layers = {0, 1};
  BertRunOutput plain = model.Run(b.ids, b.types, b.mask, {}, opt);
  // Padding keys get no attention; rows sum to 1.
  torch::Tensor p0 = plain.attentions[0];
  EXPECT_EQ(p0.sizes(), torch::IntArrayRef({2, 2, 6, 6}));
  EXPECT_EQ(p0.index({1, torch::indexing::Slice(), torch::indexing::Slice(),
                      torch::indexing::Slice(4, 6)})
                .abs()
                .max()
                .item<float>(),
            0.0f);
  EXPECT_TRUE(torch::allclose(p0.sum(-1), torch::ones({2, 2, 6})));

  // Layer 1 head 0 ablated: zero mode in row 0, uniform in row 1.
  const HeadMask zero = *HeadMask::Ablate(2, 2, {{1, 0}}, AblationMode::kZero);
  const HeadMask uniform =
      *HeadMask::Ablate(2, 2, {{1, 0}}, AblationMode::kUniform);
  BertRunOutput masked =
      model.Run(b.ids, b.types, b.mask, {&zero, &uniform}, opt);
  EXPECT_TRUE(torch::equal(masked.attentions[0], plain.attentions[0]));
  torch::Tensor p1 = masked.attentions[1];
  EXPECT_EQ(p1[0][0].abs().max().item<float>(), 0.0f);
  torch::Tensor uniform_row =
      torch::tensor({0.25f, 0.25f, 0.25f, 0.25f, 0.0f, 0.0f});
  EXPECT_TRUE(torch::allclose(p1[1][0], uniform_row.expand({6, 6})));
  EXPECT_TRUE(torch::equal(p1.select(1, 1), plain.attentions[1].select(1, 1)));
  EXPECT_FALSE(torch::allclose(masked.logits, plain.logits));
}

// The [CLS]-only last layer is an optimisation, never a different answer:
// same logits as the full layer, with and without masks (zero and uniform
// rows), and padding in the batch.
TEST(BertModelTest, ClsOnlyLastLayerKeepsTheLogits) {
  torch::manual_seed(4);
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  model.eval();
  torch::InferenceMode guard;
  Batch b = TwoRows();
  const HeadMask zero = *HeadMask::Ablate(2, 2, {{1, 1}}, AblationMode::kZero);
  const HeadMask uniform =
      *HeadMask::Ablate(2, 2, {{1, 1}}, AblationMode::kUniform);
  for (bool masked : {false, true}) {
    EngineOptions opt;
    std::vector<const HeadMask*> masks;
    if (masked) masks = {&zero, &uniform};
    opt.cls_only_last_layer = false;
    torch::Tensor full = model.Run(b.ids, b.types, b.mask, masks, opt).logits;
    opt.cls_only_last_layer = true;
    torch::Tensor cls = model.Run(b.ids, b.types, b.mask, masks, opt).logits;
    EXPECT_TRUE(torch::allclose(full, cls, 1e-5, 1e-6)) << full << cls;
    // Asking for the last layer's attention needs every row of it.
    opt.attention_layers = {1};
    BertRunOutput out = model.Run(b.ids, b.types, b.mask, masks, opt);
    EXPECT_EQ(out.attentions[1].sizes(), torch::IntArrayRef({2, 2, 6, 6}));
    EXPECT_TRUE(torch::allclose(full, out.logits, 1e-5, 1e-6));
  }
}

TEST(BertModelTest, DropoutOnlyInTrainMode) {
  torch::manual_seed(3);
  BertForSequenceClassificationImpl model(TinyConfig(), 3);
  Batch b = TwoRows();
  EngineOptions opt;
  model.eval();
  {
    torch::NoGradGuard no_grad;
    torch::Tensor a = model.Run(b.ids, b.types, b.mask, {}, opt).logits;
    torch::Tensor c = model.Run(b.ids, b.types, b.mask, {}, opt).logits;
    EXPECT_TRUE(torch::equal(a, c));
    model.train();
    torch::Tensor d = model.Run(b.ids, b.types, b.mask, {}, opt).logits;
    torch::Tensor e = model.Run(b.ids, b.types, b.mask, {}, opt).logits;
    EXPECT_FALSE(torch::equal(d, e));
  }
}

TEST(BertModelTest, ActivationChangesOutput) {
  EXPECT_EQ(ActivationFromName("gelu"), Activation::kGeluErf);
  EXPECT_EQ(ActivationFromName("gelu_new"), Activation::kGeluTanh);
  EXPECT_EQ(ActivationFromName("gelu_pytorch_tanh"), Activation::kGeluTanh);
  EXPECT_EQ(ActivationFromName("relu"), Activation::kRelu);
  BertConfig c = TinyConfig();
  torch::Tensor x = torch::linspace(-3, 3, 7).view({1, 7}).repeat({1, 1});
  c.hidden_size = 7;
  c.intermediate_size = 7;
  torch::NoGradGuard no_grad;
  auto run = [&](const std::string& act) {
    c.hidden_act = act;
    BertIntermediateImpl m(c);
    m.named_parameters()["dense.weight"].copy_(torch::eye(7));
    m.named_parameters()["dense.bias"].zero_();
    return m.forward(x);
  };
  EXPECT_TRUE(torch::allclose(run("relu"), torch::relu(x)));
  torch::Tensor erf = run("gelu");
  EXPECT_TRUE(torch::allclose(
      erf, 0.5 * x * (1 + torch::erf(x / std::sqrt(2.0))), 1e-6, 1e-6));
  EXPECT_FALSE(torch::equal(erf, run("gelu_new")));
}

// Packing (EngineOptions::pack_tokens) and a start from cached head outputs
// (LayerStart::head_outputs) are optimisations, never a different answer.
BertConfig WideConfig() {  // d = 64: TwoRows' padding (0.2) is worth packing
  BertConfig c = TinyConfig();
  c.hidden_size = 64;
  c.intermediate_size = 32;
  return c;
}

TEST(BertModelTest, PackedTokensPackWhereThePaddingPays) {
  const Batch b = TwoRows();  // 10 real tokens, 2 padding
  const PackedTokens packed = PackedTokens::Make(b.mask, 10.0 / 64);
  ASSERT_TRUE(packed.defined());
  EXPECT_EQ(packed.tokens(), 10);
  const torch::Tensor x = torch::randn({2, 6, 3});
  const torch::Tensor round_trip = packed.Unpack(packed.Pack(x));
  EXPECT_TRUE(torch::equal(round_trip * b.mask.unsqueeze(-1), round_trip));
  EXPECT_TRUE(torch::equal(round_trip, x * b.mask.unsqueeze(-1)));
  EXPECT_TRUE(torch::equal(packed.FirstTokens(packed.Pack(x)), x.select(1, 0)));
  EXPECT_FALSE(PackedTokens::Make(b.mask, 0.2).defined());  // not > 0.2
  EXPECT_FALSE(PackedTokens::Make(torch::ones({2, 6}, torch::kLong)).defined());
}

TEST(BertModelTest, PackedPassGivesThePaddedPassOutputs) {
  torch::manual_seed(5);
  BertForSequenceClassificationImpl model(WideConfig(), 3);
  model.eval();
  torch::InferenceMode guard;
  const Batch b = TwoRows();
  const HeadMask zero = *HeadMask::Ablate(2, 2, {{0, 1}}, AblationMode::kZero);
  const HeadMask uniform =
      *HeadMask::Ablate(2, 2, {{1, 0}}, AblationMode::kUniform);
  for (bool cls_only : {false, true}) {
    EngineOptions opt;
    opt.cls_only_last_layer = cls_only;
    if (!cls_only) {
      opt.capture_hidden = {1, 2};
      opt.capture_head_outputs = {0};
    }
    BertRunOutput padded =
        model.Run(b.ids, b.types, b.mask, {&zero, &uniform}, opt);
    opt.pack_tokens = true;
    BertRunOutput packed =
        model.Run(b.ids, b.types, b.mask, {&zero, &uniform}, opt);
    EXPECT_TRUE(torch::allclose(padded.logits, packed.logits, 1e-5, 1e-6))
        << padded.logits << packed.logits;
    const torch::Tensor real = b.mask.unsqueeze(-1).to(torch::kFloat);
    for (auto& [l, t] : padded.hidden) {  // packed: zero at padding
      EXPECT_TRUE(torch::allclose(t * real, packed.hidden.at(l), 1e-5, 1e-6));
    }
    for (auto& [l, t] : padded.head_outputs) {
      EXPECT_TRUE(
          torch::allclose(t * real, packed.head_outputs.at(l), 1e-5, 1e-6));
    }
    EXPECT_EQ(packed.hidden.size(), cls_only ? 0u : 2u);
    EXPECT_EQ(packed.head_outputs.size(), cls_only ? 0u : 1u);
  }
  // Attention asked for: the pass stays padded (HF's rows at padding
  // queries), so it is the padded pass to the bit.
  EngineOptions opt;
  opt.attention_layers = {0, 1};
  const BertRunOutput padded =
      model.Run(b.ids, b.types, b.mask, {&zero, &zero}, opt);
  opt.pack_tokens = true;
  const BertRunOutput packed =
      model.Run(b.ids, b.types, b.mask, {&zero, &zero}, opt);
  ASSERT_EQ(packed.attentions.size(), 2u);
  for (auto& [l, t] : padded.attentions) {
    EXPECT_TRUE(torch::equal(t, packed.attentions.at(l)));
  }
  EXPECT_TRUE(torch::equal(padded.logits, packed.logits));
}

TEST(BertModelTest, StartFromHeadOutputsGivesTheFullPassLogits) {
  torch::manual_seed(6);
  BertForSequenceClassificationImpl model(WideConfig(), 3);
  model.eval();
  torch::InferenceMode guard;
  const Batch b = TwoRows();
  EngineOptions capture;
  capture.capture_hidden = {1};
  capture.capture_head_outputs = {1};
  const BertRunOutput base = model.Run(b.ids, b.types, b.mask, {}, capture);
  const HeadMask l1h0 = *HeadMask::Ablate(2, 2, {{1, 0}}, AblationMode::kZero);
  const HeadMask l1h1 = *HeadMask::Ablate(2, 2, {{1, 1}}, AblationMode::kZero);
  for (bool pack : {false, true}) {
    EngineOptions opt;
    opt.pack_tokens = pack;
    const torch::Tensor full =
        model.Run(b.ids, b.types, b.mask, {&l1h0, &l1h1}, opt).logits;
    opt.start_layer = 1;
    const torch::Tensor resumed =
        model
            .Run(b.ids, b.types, b.mask, {&l1h0, &l1h1}, opt,
                 LayerStart{base.hidden.at(1), base.head_outputs.at(1)})
            .logits;
    EXPECT_TRUE(torch::allclose(full, resumed, 1e-5, 1e-6)) << full << resumed;
    // The masks matter here, so the comparison means something.
    EXPECT_FALSE(torch::allclose(full, base.logits, 1e-3, 1e-3));
  }
}

}  // namespace
}  // namespace bertology
