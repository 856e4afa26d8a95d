// Test helpers for the numerical goldens under tests/golden/ (JSON written by
// the float64 reference scripts there): where the source tree is, reading a
// golden, nested number arrays as tensors, encodings from token ids, and
// interventions.golden.json's reference statistics and case masks.
#ifndef BERTOLOGY_CORE_MODEL_GOLDEN_FOR_TESTS_H_
#define BERTOLOGY_CORE_MODEL_GOLDEN_FOR_TESTS_H_

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/core/model/engine.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/model.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {
namespace golden {

inline std::string SourceDir() {
  const char* dir = std::getenv("BERTOLOGY_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// tests/golden/<name>, parsed.
inline nlohmann::json Read(const std::string& name) {
  std::ifstream in(SourceDir() + "/tests/golden/" + name);
  EXPECT_TRUE(in.good()) << "golden file missing: " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// A nested JSON array of numbers as a tensor of its shape.
inline torch::Tensor ToTensor(const nlohmann::json& j,
                              torch::ScalarType dtype) {
  std::vector<int64_t> shape;
  const nlohmann::json* cur = &j;
  while (cur->is_array()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  std::vector<double> flat;
  std::function<void(const nlohmann::json&)> walk =
      [&](const nlohmann::json& x) {
        if (x.is_array()) {
          for (const nlohmann::json& y : x) walk(y);
        } else {
          flat.push_back(x.get<double>());
        }
      };
  walk(j);
  return torch::tensor(flat, torch::kDouble).view(shape).to(dtype);
}

inline double MaxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  return (a.to(torch::kDouble) - b.to(torch::kDouble))
      .abs()
      .max()
      .item<double>();
}

// An encoding of the given ids and token types, cut at the first
// attention_mask 0 when `mask` is given.
inline Encoding EncodingOf(const nlohmann::json& ids,
                           const nlohmann::json& types,
                           const nlohmann::json& mask = nullptr) {
  Encoding e;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!mask.is_null() && mask[i].get<int>() == 0) break;
    Token t;
    t.id = ids[i].get<int>();
    t.segment = types[i].get<int>();
    e.tokens.push_back(t);
  }
  return e;
}

// interventions.golden.json's reference set (`golden["reference"]`) as
// statistics of `model` (in batches of 3, as the reference script runs
// them); null with a test failure if they cannot be computed.
inline std::shared_ptr<const HeadReference> ReferenceStats(
    const Model& model, const nlohmann::json& golden) {
  const nlohmann::json& ref = golden["reference"];
  std::vector<Encoding> encodings;
  for (size_t r = 0; r < ref["input_ids"].size(); ++r) {
    encodings.push_back(EncodingOf(ref["input_ids"][r],
                                   ref["token_type_ids"][r],
                                   ref["attention_mask"][r]));
  }
  std::vector<const Encoding*> ptrs;
  for (const Encoding& e : encodings) ptrs.push_back(&e);
  auto stats = ComputeHeadReference(model, ptrs, /*batch_rows=*/3);
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? *stats : nullptr;
}

// Row `row` of an ablation case of interventions.golden.json (a 3 x 4
// mask in the case's mode, "mean", "mean_by_role", "resample" or "zero")
// reading `stats` with the case's draws and alignment.
inline HeadMask InterventionMask(
    const nlohmann::json& c, size_t row,
    const std::shared_ptr<const HeadReference>& stats) {
  std::vector<float> values;
  for (const nlohmann::json& layer : c["head_mask"][row]) {
    for (const nlohmann::json& v : layer) values.push_back(v.get<float>());
  }
  const std::string mode = c["mode"];
  auto mask =
      HeadMask::Dense(3, 4, values,
                      mode == "mean"           ? AblationMode::kMean
                      : mode == "mean_by_role" ? AblationMode::kMeanByRole
                      : mode == "resample"     ? AblationMode::kResample
                                               : AblationMode::kZero);
  EXPECT_TRUE(mask.ok()) << mask.status();
  ResampleDraws draws{std::max(1, c["draws"].get<int>()),
                      c["seed"].get<uint64_t>()};
  if (c.value("alignment", "") == "scaled") {
    draws.alignment = ResampleAlignment::kScaled;
  }
  mask->set_reference(stats, draws);
  return *mask;
}

// An ablation case's expected logits [N, C]: its "logits", or for a
// resample case draw `draw`'s.
inline torch::Tensor CaseLogits(const nlohmann::json& c, int draw = 0) {
  return ToTensor(
      c.contains("draw_logits") ? c["draw_logits"][draw] : c["logits"],
      torch::kDouble);
}

// `golden["inputs"]` (padded ids, types and mask) as a batch of `model`,
// with the rows' token layouts (MakeBatch), every row at draw `draw`.
inline ModelInput GoldenInput(const Model& model, const nlohmann::json& golden,
                              int draw = 0) {
  const nlohmann::json& in = golden["inputs"];
  std::vector<Encoding> encodings;
  for (size_t r = 0; r < in["input_ids"].size(); ++r) {
    encodings.push_back(EncodingOf(in["input_ids"][r], in["token_type_ids"][r],
                                   in["attention_mask"][r]));
  }
  std::vector<const Encoding*> ptrs;
  for (const Encoding& e : encodings) ptrs.push_back(&e);
  auto input = model.engine().MakeBatch(ptrs);
  EXPECT_TRUE(input.ok()) << input.status();
  if (!input.ok()) return ModelInput();
  input->draws.assign(encodings.size(), draw);
  return *input;
}

// A fixture: the tiny golden model (tests/golden/tiny-bert-cls, CPU F32),
// interventions.golden.json and its reference statistics, loaded once per
// suite.
class InterventionsFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new nlohmann::json(Read("interventions.golden.json"));
    ModelOptions options;
    options.dir = SourceDir() + "/tests/golden/tiny-bert-cls";
    auto model = Model::Load(options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
    auto stats = ReferenceStats(*model_, *golden_);
    ASSERT_NE(stats, nullptr);
    stats_ = new std::shared_ptr<const HeadReference>(stats);
  }
  static void TearDownTestSuite() {
    delete stats_;
    delete model_;
    delete golden_;
  }

  inline static nlohmann::json* golden_ = nullptr;
  inline static Model* model_ = nullptr;
  inline static std::shared_ptr<const HeadReference>* stats_ = nullptr;
};

}  // namespace golden
}  // namespace bertology

#endif  // BERTOLOGY_CORE_MODEL_GOLDEN_FOR_TESTS_H_
