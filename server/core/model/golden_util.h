// Test helpers for the numerical goldens under tests/golden/ (JSON written by
// the float64 reference scripts there): where the source tree is, reading a
// golden, nested number arrays as tensors, encodings from token ids.
#ifndef BERTOLOGY_CORE_GOLDEN_UTIL_H_
#define BERTOLOGY_CORE_GOLDEN_UTIL_H_

#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
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

}  // namespace golden
}  // namespace bertology

#endif  // BERTOLOGY_CORE_GOLDEN_UTIL_H_
