// libFuzzer target: requests through the validation the handlers run before
// any model work (request_validation.h, ExpandMaskSpecs), for a model of the
// golden checkpoint's shape (3 layers x 4 heads, its vocabulary, 64 tokens).
// Byte 0 picks the request type; the rest is the serialized message
// (ParseFromArray: no libprotobuf-mutator in Debian, so the mutations are
// byte-level, which still reaches every field of a seed's shape).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bertology/v1/bertology.pb.h"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/service/convert/request_validation.h"
#include "server/service/convert/sweep_masks.h"
#include "server/service/registry/service_limits.h"

namespace bertology {
namespace {

constexpr int kLayers = 3, kHeads = 4, kMaxSeqLen = 64;

const Tokenizer& GoldenTokenizer() {
  static const Tokenizer* tokenizer = [] {
    auto v = Vocab::FromFile(BERTOLOGY_FUZZ_SOURCE_DIR
                             "/tests/golden/tiny-bert-cls/vocab.txt");
    if (!v.ok()) std::abort();
    return new BertTokenizer(*std::move(v), TokenizerOptions{});
  }();
  return *tokenizer;
}

ServiceLimits Limits() {
  ServiceLimits limits;
  limits.max_masks_per_sweep = 2000;  // each mask is 12 floats here
  return limits;
}

void Classify(const v1::ClassifyRequest& r, const ServiceLimits& limits) {
  for (int i = 0; i < r.inputs_size(); ++i) {
    (void)EncodeInput(GoldenTokenizer(), kMaxSeqLen, r.inputs(i), "inputs",
                      limits);
  }
  (void)ParseHeadMask(r.head_mask(), kLayers, kHeads, AblationMode::kZero,
                      "head_mask");
}

void GetAttention(const v1::GetAttentionRequest& r,
                  const ServiceLimits& limits) {
  (void)EncodeInput(GoldenTokenizer(), kMaxSeqLen, r.input(), "input", limits);
  (void)ParseHeadMask(r.head_mask(), kLayers, kHeads, AblationMode::kUniform,
                      "head_mask");
  auto layers = ParseIndexSelection(r.layers(), kLayers, "layers");
  auto heads = ParseIndexSelection(r.heads(), kHeads, "heads");
  if (layers.ok()) {
    for (int l : *layers) {
      if (l < 0 || l >= kLayers) std::abort();
    }
  }
  if (heads.ok()) {
    for (int h : *heads) {
      if (h < 0 || h >= kHeads) std::abort();
    }
  }
}

void Sweep(const v1::SweepAblationRequest& r, const ServiceLimits& limits) {
  auto mode = ParseAblationMode(r.mode(), AblationMode::kZero, "mode");
  if (!mode.ok()) return;
  SweepMaskOptions options;
  options.layers = kLayers;
  options.heads = kHeads;
  options.mode = *mode;
  options.max_masks = limits.max_masks_per_sweep;
  auto masks = ExpandMaskSpecs(r.masks(), options);
  if (masks.ok() && static_cast<int>(masks->size()) > options.max_masks) {
    std::abort();
  }
  for (int i = 0; i < r.examples_size(); ++i) {
    (void)EncodeInput(GoldenTokenizer(), kMaxSeqLen, r.examples(i).input(),
                      "examples", limits);
  }
}

void Tokenize(const v1::TokenizeRequest& r, const ServiceLimits& limits) {
  (void)EncodeText(GoldenTokenizer(), kMaxSeqLen, r.text_a(), r.text_b(),
                   "text_a", limits);
}

}  // namespace
}  // namespace bertology

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bertology::ServiceLimits limits = bertology::Limits();
  const void* bytes = data + 1;
  const int n = static_cast<int>(size - 1);
  switch (data[0] % 4) {
    case 0: {
      bertology::v1::ClassifyRequest r;
      if (r.ParseFromArray(bytes, n)) bertology::Classify(r, limits);
      break;
    }
    case 1: {
      bertology::v1::GetAttentionRequest r;
      if (r.ParseFromArray(bytes, n)) bertology::GetAttention(r, limits);
      break;
    }
    case 2: {
      bertology::v1::SweepAblationRequest r;
      if (r.ParseFromArray(bytes, n)) bertology::Sweep(r, limits);
      break;
    }
    default: {
      bertology::v1::TokenizeRequest r;
      if (r.ParseFromArray(bytes, n)) bertology::Tokenize(r, limits);
      break;
    }
  }
  return 0;
}
