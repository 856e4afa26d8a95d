#include "server/core/model/head_reference.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/core/model/model.h"
#include "server/core/model/model_tensors.h"
#include "server/core/status_macros.h"

namespace bertology {
namespace {

// FNV-1a 64: stable across runs, builds and machines (absl::Hash is not).
class Fnv1a {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001B3ULL;
    }
  }
  void AddInt(int64_t v) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<unsigned char>(v >> (8 * i));
    Add(bytes, 8);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xCBF29CE484222325ULL;
};

}  // namespace

std::string HeadReferenceId(const Model& model,
                            const std::vector<const Encoding*>& encodings) {
  Fnv1a h;
  h.Add(model.identity().data(), model.identity().size());
  h.AddInt(static_cast<int64_t>(encodings.size()));
  for (const Encoding* e : encodings) {
    h.AddInt(static_cast<int64_t>(e->tokens.size()));
    for (const Token& t : e->tokens) {
      h.AddInt(t.id);
      h.AddInt(t.segment);
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(h.value()));
  return absl::StrCat("hs-", hex);
}

absl::StatusOr<std::shared_ptr<const HeadReference>> ComputeHeadReference(
    const Model& model, const std::vector<const Encoding*>& encodings,
    int batch_rows) {
  if (encodings.empty()) {
    return absl::InvalidArgumentError("the reference set is empty");
  }
  const BertConfig& c = model.config();
  const int64_t layers = c.num_hidden_layers, heads = c.num_attention_heads,
                d = c.head_size();
  const int64_t n = static_cast<int64_t>(encodings.size());
  // Per example, the sum of each head's output over its real tokens, in
  // float64 on the CPU.
  torch::Tensor sums = torch::zeros({n, layers, heads, d}, torch::kDouble);
  torch::Tensor counts = torch::zeros({n}, torch::kDouble);
  ForwardOptions options;
  options.compute_logits = false;
  for (int l = 0; l < layers; ++l) options.capture_head_outputs.push_back(l);
  batch_rows = std::max(1, batch_rows);
  for (int64_t start = 0; start < n; start += batch_rows) {
    const int64_t end = std::min(n, start + batch_rows);
    const std::vector<const Encoding*> batch(encodings.begin() + start,
                                             encodings.begin() + end);
    ASSIGN_OR_RETURN(ModelInput input, model.MakeBatch(batch));
    ASSIGN_OR_RETURN(TensorOutput out,
                     model.ForwardTensors(input, {}, options));
    try {
      torch::InferenceMode inference_mode;
      const torch::Tensor real =
          input.attention_mask.to(torch::kCPU, torch::kDouble);  // [B, T]
      const int64_t b = real.size(0);
      for (int64_t l = 0; l < layers; ++l) {
        const torch::Tensor o =
            out.head_outputs.at(l).to(torch::kCPU, torch::kDouble);  // [B,T,D]
        const torch::Tensor s = (o * real.unsqueeze(-1)).sum(1);     // [B, D]
        sums.narrow(0, start, b).select(1, l).copy_(s.view({b, heads, d}));
      }
      counts.narrow(0, start, b).copy_(real.sum(1));
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("head statistics failed: ", e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("head statistics failed: ", e.what()));
    }
  }
  auto ref = std::make_shared<HeadReference>();
  try {
    torch::InferenceMode inference_mode;
    const double total = counts.sum().item<double>();
    const torch::Tensor mean = sums.sum(0) / total;
    const torch::Tensor pooled = sums / counts.clamp_min(1).view({n, 1, 1, 1});
    // The model's placement: the dtype and device of its logits' inputs.
    ASSIGN_OR_RETURN(ModelInput probe, model.MakeBatch({encodings[0]}));
    const torch::Device device = probe.input_ids.device();
    const torch::ScalarType dtype = model.dtype() == "F16"    ? torch::kHalf
                                    : model.dtype() == "BF16" ? torch::kBFloat16
                                                              : torch::kFloat;
    ref->mean = mean.to(device, dtype);
    ref->pooled = pooled.to(device, dtype);
    ref->tokens = static_cast<int64_t>(total);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("head statistics failed: ", e.what_without_backtrace()));
  }
  ref->id = HeadReferenceId(model, encodings);
  ref->examples = static_cast<int>(n);
  for (const Encoding* e : encodings) ref->truncated_examples += e->truncated;
  return std::shared_ptr<const HeadReference>(std::move(ref));
}

}  // namespace bertology
