// A loaded BERT, ready to serve: config, tokenizer and weights on a device.
//
// This is the one interface the service uses, and it has no libtorch in it:
// rows go in as encodings with their head masks, results come out as plain
// float arrays. The tensor face (padded batches, hidden states to cache and
// resume from, passes with autograd) is the Engine behind it (engine.h),
// for the core only (the sweep executor, patching, statistics, importance,
// tests, benchmarks).
//
// It never throws: libtorch's c10::Error (and std::exception) are caught
// here and returned as status.
// Thread safety: a Model is immutable after Load(); Forward() and its
// engine's passes may be called from many threads at once (they run under
// torch::InferenceMode and keep no per-call state in the module).
#ifndef BERTOLOGY_CORE_MODEL_H_
#define BERTOLOGY_CORE_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/head_mask.h"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/head_kind.h"
#include "server/core/model/forward_options.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

class Engine;  // engine.h: the tensor face, core only

struct ModelOptions {
  std::string dir;             // HF model directory
  std::string device = "cpu";  // "cpu" or "cuda[:N]"
  // Compute dtype: "auto" (F32 on CPU; on CUDA BF16 where the card has
  // BF16 tensor cores, compute capability 8.0 or later, else the file's
  // dtype), "F32", "F16" or "BF16".
  std::string dtype = "auto";
  // Attention where no probabilities leave the pass (ForwardOptions::
  // attention_kernel): "auto" (fused under libtorch >= 2.0, on CPU as on
  // CUDA; explicit under 1.x, so Debian 12's results stay bit for bit),
  // "explicit" or "fused" (FAILED_PRECONDITION under 1.x).
  std::string attention = "auto";
  // On CUDA, F32 matrix products and convolutions in TF32 (10-bit
  // mantissa, about 1e-3 relative per product; Ampere and later). A
  // process-wide libtorch setting: the last model loaded sets it. No effect
  // on CPU.
  bool tf32 = true;
  int max_seq_len = 0;  // 0: the model's max_position_embeddings
};

// A row-major float array and its shape, e.g. logits [B, C].
struct FloatArray {
  std::vector<float> data;
  std::vector<int64_t> shape;
};

// One row of a forward pass: an input and the head mask it runs under.
// Both must outlive the call.
struct ModelRow {
  const Encoding* encoding = nullptr;
  const HeadMask* mask = nullptr;  // nullptr: all heads kept
  // A mask in kResample: which of its draws this row runs, in [0,
  // mask->draws().count). The caller averages its metric over the draws.
  int draw = 0;
};

// Model::Forward's results, float32. B rows, T positions (the longest row).
struct ForwardOutput {
  // [B, C] for a sequence classifier, [B, T, C] for a token classifier
  // (padding positions included); empty without logits.
  FloatArray logits;
  std::map<int, FloatArray> attentions;  // layer -> [B, H, T, T], post-mask
};

class Model {
 public:
  static absl::StatusOr<std::unique_ptr<Model>> Load(
      const ModelOptions& options);
  ~Model();

  const BertConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The head on top of the encoder, from config.json's architectures or the
  // weights' keys (bert_head.h).
  HeadKind head_kind() const { return head_.kind; }
  const std::string& architecture() const { return head_.architecture; }
  // True when compute_logits works: a sequence or a token classifier.
  bool has_classifier() const { return head_.kind != HeadKind::kEncoder; }
  // The classifier's rows (logits per position); 0 without a classifier.
  int num_labels() const { return head_.num_labels; }
  // OK for a sequence or token classifier; else FAILED_PRECONDITION naming
  // the architecture and what logits would need.
  absl::Status CheckCanClassify() const;
  // Keys in the weights file the model does not compute with (another
  // head's), sorted; for one log line at start-up.
  const std::vector<std::string>& unused_keys() const {
    return head_.unused_keys;
  }
  // What decides this model's numbers besides the code: the weights file's
  // name and SHA-256 (its content: copies are the same model), the compute
  // dtype and max_seq_len, e.g. "model.safetensors:sha256=9f86d0...;
  // dtype=F32;max_seq_len=128".
  const std::string& identity() const { return identity_; }
  int max_seq_len() const { return max_seq_len_; }
  const std::string& device() const { return device_name_; }
  const std::string& dtype() const { return dtype_name_; }
  // "explicit" or "fused": what ForwardOptions::attention_kernel kAuto runs.
  const std::string& attention() const { return attention_name_; }
  // Bytes free on the model's CUDA device now (cuda_device.h: the driver's
  // count plus what libtorch's allocator holds unused); FAILED_PRECONDITION
  // on CPU.
  absl::StatusOr<int64_t> FreeDeviceBytes() const;
  const std::string& dir() const { return dir_; }

  // OK if `mask` fits this model ([num_hidden_layers x
  // num_attention_heads]); else INVALID_ARGUMENT "<field> has shape 2x4;
  // the model has 3x4". Masks parsed for this model (ParseHeadMask) always
  // fit; this guards rows that come from elsewhere.
  absl::Status CheckHeadMask(const HeadMask& mask,
                             const std::string& field) const;

  // One pass over `rows`, padded to the longest, each row under its own
  // mask. INVALID_ARGUMENT naming the row ("rows[2].mask ...") for an empty,
  // too long or out-of-vocabulary encoding or a mask of the wrong shape,
  // and naming the field for a layer index out of range;
  // FAILED_PRECONDITION for compute_logits without a classifier (naming the
  // architecture) or a mask whose reference statistics cannot fill a row;
  // RESOURCE_EXHAUSTED when the device runs out of memory (fewer rows may
  // fit); INTERNAL for another libtorch failure.
  absl::StatusOr<ForwardOutput> Forward(const std::vector<ModelRow>& rows,
                                        const ForwardOptions& options) const;

  // The tensor face (engine.h; core only).
  const Engine& engine() const { return *engine_; }

 private:
  Model();
  BertConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  BertHead head_;
  int max_seq_len_ = 0;
  std::string device_name_, dtype_name_, attention_name_, dir_, identity_;
  std::unique_ptr<const Engine> engine_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_MODEL_H_
