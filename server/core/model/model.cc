#include "server/core/model/model.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/checkpoint/checkpoint.h"
#include "server/core/checkpoint/file_digest.h"
#include "server/core/model/bert_model.h"
#include "server/core/model/cuda_device.h"
#include "server/core/model/device_copy.h"
#include "server/core/model/engine.h"
#include "server/core/model/head_reference.h"
#include "server/core/model/reference_tensors.h"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/core/tokenizer/piece_tokenizers.h"
#include "server/core/tokenizer/vocab.h"

namespace bertology {
namespace {

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name != "cuda" && !absl::StartsWith(name, "cuda:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", name, " is not one of cpu, cuda, cuda:N"));
  }
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device=", name, " requested but ",
        CudaCompiledIn()
            ? "no CUDA device is visible (this libtorch has CUDA: check the "
              "driver and CUDA_VISIBLE_DEVICES)"
            : "this libtorch was built without CUDA"));
  }
  try {
    torch::Device device(name);
    const int index = device.has_index() ? device.index() : 0;
    const int count = static_cast<int>(torch::cuda::device_count());
    if (index >= count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--device=", name, ": only ", count, " CUDA device(s) present"));
    }
    return torch::Device(torch::kCUDA, index);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", name, ": ", e.what()));
  }
}

// "auto" on CUDA: BF16 where the card has BF16 tensor cores (compute
// capability 8.0, Ampere, or later), else the file's dtype.
std::string AutoCudaDtype(const std::string& file_dtype,
                          const torch::Device& device) {
  const absl::StatusOr<int> capability = CudaComputeCapability(device.index());
  return capability.ok() && *capability >= 80 ? "BF16" : file_dtype;
}

// Resolves "auto" and checks the device can compute in the dtype.
absl::StatusOr<std::pair<torch::ScalarType, std::string>> ResolveDtype(
    const std::string& requested, const std::string& file_dtype,
    const torch::Device& device) {
  std::string name = requested;
  if (name == "auto") {
    name = device.is_cuda() ? AutoCudaDtype(file_dtype, device) : "F32";
  }
  if (name == "F32") return std::make_pair(torch::kFloat, name);
  if (name == "BF16") return std::make_pair(torch::kBFloat16, name);
  if (name == "F16") {
    if (!device.is_cuda()) {
      return absl::InvalidArgumentError(
          "--dtype=F16 is not supported on CPU (libtorch has no CPU half "
          "matmul); use F32 or BF16");
    }
    return std::make_pair(torch::kHalf, name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--dtype=", requested, " is not one of auto, F32, F16, BF16"));
}

// ModelOptions::attention: "auto" is fused wherever libtorch has it
// (>= 2.0): flash / memory-efficient kernels on CUDA, and on CPU under 2.6
// measured 1.16x the explicit path's sweep rate on the shipped model and
// 1.6x its encoder pass (bench/RESULTS.md, "Fused attention on CPU").
absl::StatusOr<std::pair<AttentionKernel, std::string>> ResolveAttention(
    const std::string& requested) {
  if (requested == "explicit" ||
      (requested == "auto" && !FusedAttentionAvailable())) {
    return std::make_pair(AttentionKernel::kExplicit, std::string("explicit"));
  }
  if (requested == "auto" || requested == "fused") {
    if (!FusedAttentionAvailable()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--attention=fused needs libtorch >= 2.0 (this is ",
                       TORCH_VERSION, ")"));
    }
    return std::make_pair(AttentionKernel::kFused, std::string("fused"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--attention=", requested, " is not one of auto, explicit, fused"));
}

// See Model::identity(). The weights' content digest, not their size and
// mtime: copies of one checkpoint (an init container's `cp -R`, another
// volume) must be one model to the sweep scheduler, the merger and the
// statistics ids. Read once at load; about as long as reading the file
// again (README, "Your own checkpoint", has the figure for BERT-base).
absl::StatusOr<std::string> Identity(const std::string& weights_file,
                                     const std::string& dtype,
                                     int max_seq_len) {
  ASSIGN_OR_RETURN(std::string digest, FileSha256(weights_file));
  return absl::StrCat(std::filesystem::path(weights_file).filename().string(),
                      ":sha256=", digest, ";dtype=", dtype,
                      ";max_seq_len=", max_seq_len);
}

// The tokenizer the checkpoint's family ships (Checkpoint::tokenizer_kind).
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeTokenizer(
    const Checkpoint& checkpoint) {
  switch (checkpoint.tokenizer_kind) {
    case TokenizerKind::kByteLevelBpe: {
      ASSIGN_OR_RETURN(auto t,
                       RobertaTokenizer::FromFiles(checkpoint.vocab_file,
                                                   checkpoint.merges_file,
                                                   checkpoint.roberta_tokenizer));
      return std::unique_ptr<Tokenizer>(std::move(t));
    }
    case TokenizerKind::kSentencePiece: {
      ASSIGN_OR_RETURN(auto t,
                       XlmrTokenizer::FromFile(checkpoint.vocab_file,
                                               XlmRobertaTokenizerOptions{}));
      return std::unique_ptr<Tokenizer>(std::move(t));
    }
    case TokenizerKind::kWordPiece:
      break;
  }
  ASSIGN_OR_RETURN(Vocab vocab, Vocab::FromFile(checkpoint.vocab_file));
  return std::unique_ptr<Tokenizer>(
      std::make_unique<BertTokenizer>(std::move(vocab), checkpoint.tokenizer));
}

}  // namespace

Model::Model() = default;
Model::~Model() = default;

absl::StatusOr<std::unique_ptr<Model>> Model::Load(
    const ModelOptions& options) {
  // The device first: a missing GPU is reported before reading the weights.
  ASSIGN_OR_RETURN(torch::Device device, ParseDevice(options.device));
  ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::Load(options.dir));
  ASSIGN_OR_RETURN(auto dtype, ResolveDtype(options.dtype,
                                            checkpoint.weights_dtype, device));
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer,
                   MakeTokenizer(checkpoint));
  ASSIGN_OR_RETURN(auto attention, ResolveAttention(options.attention));
  if (device.is_cuda()) {
    at::globalContext().setAllowTF32CuBLAS(options.tf32);
    at::globalContext().setAllowTF32CuDNN(options.tf32);
  }

  std::unique_ptr<Model> model(new Model());
  model->config_ = checkpoint.config;
  model->dir_ = options.dir;
  model->device_name_ = device.str();
  model->dtype_name_ = dtype.second;
  model->attention_name_ = attention.second;
  model->head_ = checkpoint.head;
  BertConfig& config = model->config_;

  const int max_pos = config.max_input_tokens();
  if (options.max_seq_len < 0 || options.max_seq_len > max_pos) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_seq_len=", options.max_seq_len, " out of range [0, ",
                     max_pos, "] (the positions max_position_embeddings of ",
                     options.dir, " covers)"));
  }
  model->max_seq_len_ =
      options.max_seq_len == 0 ? max_pos : options.max_seq_len;

  ASSIGN_OR_RETURN(
      model->identity_,
      Identity(checkpoint.weights_file, dtype.second, model->max_seq_len_));

  if (tokenizer->vocab_size() > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        checkpoint.vocab_file, ": the tokenizer has ", tokenizer->vocab_size(),
        " ids but config.json's vocab_size is ", config.vocab_size));
  }
  model->tokenizer_ = std::move(tokenizer);

  try {
    auto module = std::make_shared<BertForSequenceClassificationImpl>(
        config, checkpoint.head.num_labels, BertDropout{}, checkpoint.head.kind,
        checkpoint.head.pooler_activation);
    absl::Status loaded = LoadStateDict(
        checkpoint.weights, module.get(), [&](const std::string& key) {
          return ToFileKey(
              config.family, key,
              checkpoint.head.kind == HeadKind::kSequenceClassification);
        });
    if (!loaded.ok()) {
      return absl::Status(loaded.code(), absl::StrCat(checkpoint.weights_file,
                                                      ": ", loaded.message()));
    }
    checkpoint.weights.clear();  // free the file's copy before moving
    module->to(device, dtype.first);
    module->eval();
    model->engine_ = std::make_unique<const Engine>(
        *model, std::move(module),
        ModelPlacement{device, dtype.first, attention.first});
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("building the model from ", options.dir, ": ", e.what()));
  }
  return model;
}

absl::Status Model::CheckCanClassify() const {
  if (has_classifier()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "model ", dir_, " is a ", head_.architecture,
      ": its encoder serves Tokenize and GetAttention, but Classify and "
      "SweepAblation need a sequence classifier (bert.pooler + classifier "
      "[labels, hidden], BertForSequenceClassification) or a token classifier "
      "(classifier [labels, hidden], BertForTokenClassification)"));
}

absl::StatusOr<int64_t> Model::FreeDeviceBytes() const {
  const ModelPlacement& placement = engine_->placement();
  if (!placement.device.is_cuda()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", dir_, " is on ", device_name_, ", not CUDA"));
  }
  ASSIGN_OR_RETURN(const CudaMemory memory,
                   QueryCudaMemory(placement.device.index()));
  return memory.free_bytes;
}

namespace {

// A float32 CPU copy of `t`, row-major.
FloatArray ToFloatArray(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kCPU, torch::kFloat).contiguous();
  FloatArray out;
  out.shape.assign(c.sizes().begin(), c.sizes().end());
  out.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return out;
}

}  // namespace

absl::StatusOr<ForwardOutput> Model::Forward(
    const std::vector<ModelRow>& rows, const ForwardOptions& options) const {
  std::vector<const Encoding*> encodings;
  std::vector<const HeadMask*> masks;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].encoding == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows[", r, "].encoding is null"));
    }
    encodings.push_back(rows[r].encoding);
    masks.push_back(rows[r].mask);
  }
  ASSIGN_OR_RETURN(ModelInput input, engine_->MakeBatch(encodings));
  for (const ModelRow& row : rows) input.draws.push_back(row.draw);
  ASSIGN_OR_RETURN(TensorOutput out,
                   engine_->Run(input, masks, EngineOptions(options)));
  try {
    ForwardOutput result;
    if (out.logits.defined()) result.logits = ToFloatArray(out.logits);
    for (const auto& [layer, probs] : out.attentions) {
      result.attentions[layer] = ToFloatArray(probs);
    }
    return result;
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("copying the forward pass's outputs: ", e.what()));
  }
}

absl::Status Model::CheckHeadMask(const HeadMask& mask,
                                  const std::string& field) const {
  if (mask.layers() != config_.num_hidden_layers ||
      mask.heads() != config_.num_attention_heads) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has shape ", mask.layers(), "x", mask.heads(),
                     "; the model has ", config_.num_hidden_layers, "x",
                     config_.num_attention_heads));
  }
  if (!ModeNeedsReference(mask.mode()) || mask.IsIdentity()) {
    return absl::OkStatus();
  }
  const char* mode = AblationModeName(mask.mode());
  const HeadReference* ref = mask.reference().get();
  if (ref == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is in mode ", mode,
                     " without reference statistics (ComputeHeadStatistics)"));
  }
  const std::vector<int64_t> shape = {config_.num_hidden_layers,
                                      config_.num_attention_heads,
                                      config_.head_size()};
  const ReferenceTensors* tensors = ref->tensors.get();
  const ModelPlacement& placement = engine_->placement();
  if (tensors == nullptr || !tensors->mean.defined() ||
      !tensors->mean.sizes().equals(shape) || !tensors->role_means.defined() ||
      tensors->role_means.dim() != 4 ||
      tensors->role_means.size(0) != kNumTokenRoles ||
      tensors->mean.device() != placement.device ||
      tensors->mean.scalar_type() != placement.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, "'s reference statistics ", ref->id,
        " were not computed on this model (shape, device or dtype differ)"));
  }
  if (mask.mode() == AblationMode::kResample &&
      (mask.draws().count < 1 ||
       mask.draws().count > ResampleDraws::kMaxCount)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " asks for ", mask.draws().count,
        " resample draws; must be in [1, ", ResampleDraws::kMaxCount, "]"));
  }
  return absl::OkStatus();
}

}  // namespace bertology
