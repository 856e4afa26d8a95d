// Reference statistics for mean, role-mean and resample ablation
// (head_mask.h): every head's output (its context vector p @ V, before the
// attention output projection) on the unmasked model over a reference set.
// This header has no libtorch: the outputs are in reference_tensors.h.
//
// Three views of the same outputs:
//   mean:          one mean over every real token of the set (pooled: serves
//                  an input of any length; what kMean reads);
//   role_means:    one mean per token role ([CLS], first [SEP], second
//                  [SEP], text_a's tokens, text_b's tokens; kMeanByRole). The
//                  pooler reads [CLS] alone, and a head's output there can
//                  be far from its pooled mean;
//   token_outputs: every real token's output, position by position, for
//                  kResample (kept only up to a byte budget: on BERT-base a
//                  token's outputs take 36 KiB in F32).
//
// Immutable once built; shared by every request that names it (thread-safe
// to read from many threads).
#ifndef BERTOLOGY_CORE_HEAD_REFERENCE_H_
#define BERTOLOGY_CORE_HEAD_REFERENCE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

class Model;
struct ReferenceTensors;  // reference_tensors.h: the outputs, core only

// The roles kMeanByRole conditions on, in role_means' order.
enum class TokenRole { kCls = 0, kSepA, kSepB, kTokenA, kTokenB };
inline constexpr int kNumTokenRoles = 5;
// "[CLS]", "[SEP] a", "[SEP] b", "text_a", "text_b".
const char* TokenRoleName(TokenRole role);

// Where an encoding's roles sit: [CLS] a... [SEP] (b... [SEP]), or
// RoBERTa's <s> a... </s> (</s> b... </s>), whose two separators between
// the texts are both kSepA. Host-side, made from the encoding (never read
// back from a device).
struct TokenLayout {
  int length = 0;  // real tokens T
  int len_a = 0;   // text_a's tokens (between [CLS] and the first [SEP])
  int len_b = 0;   // text_b's tokens (0 for a single text)
  bool pair = false;
  int separators = 1;  // between text_a and text_b: 1, or RoBERTa's 2
  // FNV-1a 64 of T and the tokens' ids and segments (the per-input part of
  // a reference id): what the draws of this input are seeded with.
  uint64_t key = 0;

  static TokenLayout Of(const Encoding& encoding);
  TokenRole RoleAt(int t) const;
  // Positions of the first separator after text_a / the last of a pair.
  int sep_a() const { return 1 + len_a; }
  int sep_b() const { return 1 + len_a + separators + len_b; }
};

struct HeadReference {
  // "hs-" + 16 hex digits of FNV-1a 64 over the model's identity() and the
  // examples' token and type ids: the same set on the same model gives the
  // same id on every replica.
  std::string id;
  int examples = 0;
  int64_t tokens = 0;  // real tokens averaged over
  int truncated_examples = 0;
  std::array<int64_t, kNumTokenRoles> role_tokens{};  // tokens per role
  // The outputs themselves (reference_tensors.h: mean, role_means,
  // token_outputs), on the model's device; never null once computed.
  std::shared_ptr<const ReferenceTensors> tensors;
  // Bytes every token's outputs take (kept in tensors->token_outputs only
  // within the budget).
  int64_t token_output_bytes = 0;
  // Example e's real tokens are rows [offsets[e], offsets[e + 1]) of
  // tensors->token_outputs.
  std::vector<int64_t> offsets;      // [examples + 1]
  std::vector<TokenLayout> layouts;  // [examples]
};

// The id ComputeHeadReference gives these encodings on `model`, without
// computing anything (to find a reference already held).
std::string HeadReferenceId(const Model& model,
                            const std::vector<const Encoding*>& encodings);

// Default budget for ReferenceTensors::token_outputs: 1 GiB.
inline constexpr int64_t kDefaultTokenOutputBudget = int64_t{1} << 30;

// Runs the unmasked model over `encodings` (batches of `batch_rows`, padded
// per batch) and averages every head's output in float64; keeps every
// token's outputs when they fit `token_output_budget` bytes.
// INVALID_ARGUMENT for no encodings; errors from the model as they are.
absl::StatusOr<std::shared_ptr<const HeadReference>> ComputeHeadReference(
    const Model& model, const std::vector<const Encoding*>& encodings,
    int batch_rows = 32,
    int64_t token_output_budget = kDefaultTokenOutputBudget);

// The resample draw rule. The pool of a row with layout `row`: the
// reference examples (in reference order) with the row's segment lengths
// (kMatchedLengths) or with as many segments (kScaled), leaving out those
// whose key equals the row's (the input itself, when it is in the set).
// Draw k takes pool[x_k mod |pool|], x_k the (k+1)-th output of splitmix64
// seeded with draws.seed XOR row.key (state += 0x9E3779B97F4A7C15; z =
// state; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) *
// 0x94D049BB133111EB; x = z ^ z >> 31): independent per input and per draw,
// with replacement, the same on every replica. -1 when the pool is empty.
int ResampleSource(const HeadReference& reference, const TokenLayout& row,
                   const ResampleDraws& draws, int draw);

// For each position t < row.length, the row of tensors->token_outputs
// that position t of `row` takes from reference example `source` under
// `alignment` (head_mask.h, ResampleAlignment).
std::vector<int64_t> ResampleTokenRows(const HeadReference& reference,
                                       int source, const TokenLayout& row,
                                       ResampleAlignment alignment);

// OK when a row with `layout` can be filled from `reference` in `mode`
// under `draws`: kMeanByRole needs a reference token of each role the row
// has; kResample needs token_outputs and a non-empty pool.
// FAILED_PRECONDITION naming `field` and what is missing.
absl::Status CheckReferenceFits(const HeadReference& reference,
                                const TokenLayout& layout, AblationMode mode,
                                const ResampleDraws& draws,
                                const std::string& field);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_HEAD_REFERENCE_H_
