#include "server/core/model/head_reference.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/model/engine.h"
#include "server/core/model/model.h"
#include "server/core/model/reference_tensors.h"

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

// splitmix64, as ResampleSource documents it.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

void AddEncoding(const Encoding& e, Fnv1a* h) {
  h->AddInt(static_cast<int64_t>(e.tokens.size()));
  for (const Token& t : e.tokens) {
    h->AddInt(t.id);
    h->AddInt(t.segment);
  }
}

}  // namespace

const char* TokenRoleName(TokenRole role) {
  switch (role) {
    case TokenRole::kCls:
      return "[CLS]";
    case TokenRole::kSepA:
      return "[SEP] a";
    case TokenRole::kSepB:
      return "[SEP] b";
    case TokenRole::kTokenA:
      return "text_a";
    case TokenRole::kTokenB:
      return "text_b";
  }
  return "unknown";
}

TokenLayout TokenLayout::Of(const Encoding& encoding) {
  TokenLayout out;
  out.length = static_cast<int>(encoding.tokens.size());
  int in_b = 0, specials_b = 0;
  for (const Token& t : encoding.tokens) {
    in_b += t.segment == 1 ? 1 : 0;
    specials_b += t.segment == 1 && t.special ? 1 : 0;
  }
  out.pair = in_b > 0;
  // [CLS] and the first [SEP] are segment 0; the last [SEP] segment 1, and
  // so is the second of RoBERTa's </s></s>.
  out.separators = std::max(1, specials_b);
  out.len_a = std::max(0, out.length - in_b - 2);
  out.len_b = std::max(0, in_b - std::max(1, specials_b));
  Fnv1a h;
  AddEncoding(encoding, &h);
  out.key = h.value();
  return out;
}

TokenRole TokenLayout::RoleAt(int t) const {
  if (t == 0) return TokenRole::kCls;
  if (t < sep_a()) return TokenRole::kTokenA;
  if (t < sep_a() + separators || !pair) return TokenRole::kSepA;
  if (t < sep_b()) return TokenRole::kTokenB;
  return TokenRole::kSepB;
}

std::string HeadReferenceId(const Model& model,
                            const std::vector<const Encoding*>& encodings) {
  Fnv1a h;
  h.Add(model.identity().data(), model.identity().size());
  h.AddInt(static_cast<int64_t>(encodings.size()));
  for (const Encoding* e : encodings) AddEncoding(*e, &h);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(h.value()));
  return absl::StrCat("hs-", hex);
}

absl::StatusOr<std::shared_ptr<const HeadReference>> ComputeHeadReference(
    const Model& model, const std::vector<const Encoding*>& encodings,
    int batch_rows, int64_t token_output_budget) {
  if (encodings.empty()) {
    return absl::InvalidArgumentError("the reference set is empty");
  }
  const BertConfig& c = model.config();
  const int64_t layers = c.num_hidden_layers, heads = c.num_attention_heads,
                d = c.head_size();
  const int64_t n = static_cast<int64_t>(encodings.size());
  auto ref = std::make_shared<HeadReference>();
  ref->offsets.assign(1, 0);
  for (const Encoding* e : encodings) {
    ref->layouts.push_back(TokenLayout::Of(*e));
    ref->offsets.push_back(ref->offsets.back() +
                           static_cast<int64_t>(e->tokens.size()));
  }
  const int64_t total_tokens = ref->offsets.back();
  const int64_t element = model.dtype() == "F32" ? 4 : 2;
  ref->token_output_bytes = total_tokens * layers * heads * d * element;
  const bool keep_tokens = ref->token_output_bytes <= token_output_budget;
  // Per role, the sum of each head's output over the tokens of that role,
  // in float64 on the CPU; the pooled mean is their total.
  torch::Tensor role_sums =
      torch::zeros({kNumTokenRoles, layers, heads, d}, torch::kDouble);
  std::vector<torch::Tensor> token_parts;  // [T_i, L, H, d] per example
  const Engine& engine = model.engine();
  EngineOptions options;
  options.compute_logits = false;
  for (int l = 0; l < layers; ++l) options.capture_head_outputs.push_back(l);
  batch_rows = std::max(1, batch_rows);
  for (int64_t start = 0; start < n; start += batch_rows) {
    const int64_t end = std::min(n, start + batch_rows);
    const std::vector<const Encoding*> batch(encodings.begin() + start,
                                             encodings.begin() + end);
    ASSIGN_OR_RETURN(ModelInput input, engine.MakeBatch(batch));
    ASSIGN_OR_RETURN(TensorOutput out, engine.Run(input, {}, options));
    try {
      torch::InferenceMode inference_mode;
      const int64_t b = end - start;
      const int64_t t = input.input_ids.size(1);
      // [B, T, L, H, d]: every layer's head outputs, per position.
      std::vector<torch::Tensor> per_layer;
      for (int64_t l = 0; l < layers; ++l) {
        per_layer.push_back(out.head_outputs.at(l).view({b, t, heads, d}));
      }
      const torch::Tensor all = torch::stack(per_layer, 2);
      const torch::Tensor all64 = all.to(torch::kCPU, torch::kDouble);
      for (int64_t r = 0; r < b; ++r) {
        const TokenLayout& layout = ref->layouts[start + r];
        // Role of each real position, as a one-hot [T_r, R] in float64.
        torch::Tensor onehot =
            torch::zeros({layout.length, kNumTokenRoles}, torch::kDouble);
        for (int p = 0; p < layout.length; ++p) {
          const int role = static_cast<int>(layout.RoleAt(p));
          onehot[p][role] = 1.0;
          ++ref->role_tokens[role];
        }
        const torch::Tensor real = all64[r].narrow(0, 0, layout.length);
        role_sums += torch::tensordot(onehot, real, {0}, {0});
        if (keep_tokens) {
          token_parts.push_back(all[r].narrow(0, 0, layout.length).clone());
        }
      }
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat("head statistics failed: ", e.what_without_backtrace()));
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("head statistics failed: ", e.what()));
    }
  }
  try {
    torch::InferenceMode inference_mode;
    const torch::Device device = engine.placement().device;
    const torch::ScalarType dtype = engine.placement().dtype;
    std::vector<double> counts(kNumTokenRoles);
    for (int r = 0; r < kNumTokenRoles; ++r) {
      counts[r] = std::max<double>(1.0, ref->role_tokens[r]);
    }
    const torch::Tensor role_means =
        role_sums /
        torch::tensor(counts, torch::kDouble).view({kNumTokenRoles, 1, 1, 1});
    auto tensors = std::make_shared<ReferenceTensors>();
    tensors->mean = (role_sums.sum(0) / static_cast<double>(total_tokens))
                        .to(device, dtype);
    tensors->role_means = role_means.to(device, dtype);
    if (keep_tokens) {
      tensors->token_outputs = torch::cat(token_parts).to(device);
    }
    ref->tensors = std::move(tensors);
    ref->tokens = total_tokens;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("head statistics failed: ", e.what_without_backtrace()));
  }
  ref->id = HeadReferenceId(model, encodings);
  ref->examples = static_cast<int>(n);
  for (const Encoding* e : encodings) ref->truncated_examples += e->truncated;
  return std::shared_ptr<const HeadReference>(std::move(ref));
}

namespace {

bool InPool(const TokenLayout& ref, const TokenLayout& row,
            ResampleAlignment alignment) {
  if (ref.key == row.key || ref.pair != row.pair) return false;
  return alignment == ResampleAlignment::kScaled ||
         (ref.len_a == row.len_a && ref.len_b == row.len_b);
}

// floor(i * m / n) for a token i of n mapped into m (n > 0).
int64_t Scaled(int64_t i, int64_t n, int64_t m) { return i * m / n; }

}  // namespace

int ResampleSource(const HeadReference& reference, const TokenLayout& row,
                   const ResampleDraws& draws, int draw) {
  // The pool is found by a scan: N layouts compared per row and draw, a few
  // microseconds beside a forward pass.
  std::vector<int> pool;
  for (size_t e = 0; e < reference.layouts.size(); ++e) {
    if (InPool(reference.layouts[e], row, draws.alignment)) {
      pool.push_back(static_cast<int>(e));
    }
  }
  if (pool.empty()) return -1;
  SplitMix64 rng(draws.seed ^ row.key);
  uint64_t x = 0;
  for (int k = 0; k <= draw; ++k) x = rng.Next();
  return pool[x % pool.size()];
}

std::vector<int64_t> ResampleTokenRows(const HeadReference& reference,
                                       int source, const TokenLayout& row,
                                       ResampleAlignment alignment) {
  const TokenLayout& ref = reference.layouts[source];
  const int64_t base = reference.offsets[source];
  std::vector<int64_t> rows(row.length);
  for (int t = 0; t < row.length; ++t) {
    int64_t p = t;
    if (alignment == ResampleAlignment::kScaled) {
      switch (row.RoleAt(t)) {
        case TokenRole::kCls:
          p = 0;
          break;
        case TokenRole::kSepA:  // the same one of RoBERTa's </s></s>
          p = ref.sep_a() + std::min(t - row.sep_a(), ref.separators - 1);
          break;
        case TokenRole::kSepB:
          p = ref.sep_b();
          break;
        case TokenRole::kTokenA:
          p = ref.len_a == 0 ? ref.sep_a()
                             : 1 + Scaled(t - 1, row.len_a, ref.len_a);
          break;
        case TokenRole::kTokenB:
          p = ref.len_b == 0 ? ref.sep_b()
                             : ref.sep_a() + ref.separators +
                                   Scaled(t - row.sep_a() - row.separators,
                                          row.len_b, ref.len_b);
          break;
      }
    }
    rows[t] = base + std::min<int64_t>(p, ref.length - 1);
  }
  return rows;
}

absl::Status CheckReferenceFits(const HeadReference& reference,
                                const TokenLayout& layout, AblationMode mode,
                                const ResampleDraws& draws,
                                const std::string& field) {
  if (mode == AblationMode::kMeanByRole) {
    for (int t = 0; t < layout.length; ++t) {
      const TokenRole role = layout.RoleAt(t);
      if (reference.role_tokens[static_cast<int>(role)] == 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            field, ": mode mean_by_role needs the mean of role ",
            TokenRoleName(role), ", and reference statistics ", reference.id,
            " have no token of that role (a reference set of single texts "
            "has no text_b)"));
      }
    }
  }
  if (mode != AblationMode::kResample) return absl::OkStatus();
  if (reference.tensors == nullptr ||
      !reference.tensors->token_outputs.defined()) {
    return absl::FailedPreconditionError(absl::StrCat(
        field,
        ": resample reads every reference token's head outputs, and "
        "reference statistics ",
        reference.id, " did not keep them (", reference.token_output_bytes,
        " bytes, over the budget); compute "
        "statistics of a smaller reference set"));
  }
  if (ResampleSource(reference, layout, draws, 0) < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": no reference input of reference statistics ", reference.id,
        " can be resampled into an input with ", layout.len_a, " text_a tokens",
        layout.pair ? absl::StrCat(" and ", layout.len_b, " text_b tokens")
                    : std::string(),
        " under alignment ", ResampleAlignmentName(draws.alignment),
        " (the input itself is never drawn); use alignment scaled or a "
        "larger reference set"));
  }
  return absl::OkStatus();
}

}  // namespace bertology
