// What the two trainers (the classifier's, trainer.cc, and masked-LM
// pretraining, masked_lm_trainer.cc) share: HF's initialisation, AdamW with
// HF's decay groups, the warm-up + linear-decay schedule, and the epoch loop
// with its progress line. Internal to bertology-train.
#ifndef BERTOLOGY_TRAIN_TRAIN_COMMON_H_
#define BERTOLOGY_TRAIN_TRAIN_COMMON_H_

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/train/train_data.h"
#include "server/train/trainer.h"

namespace bertology {

// HF's BertPreTrainedModel._init_weights: N(0, 0.02) for linear and
// embedding weights, zero biases, LayerNorm weight 1 and bias 0. Draws from
// libtorch's seeded generator.
void InitWeights(torch::nn::Module& module);

// AdamW over every parameter of `modules`, with no weight decay on biases
// and LayerNorm, as in HF's run_glue. Draws no random numbers.
torch::optim::AdamW MakeOptimizer(
    const TrainOptions& o, const std::vector<torch::nn::Module*>& modules);

// The encoded train and dev sets, the label set and the vocabulary.
struct TrainData {
  std::vector<std::string> labels;  // {""} for unlabelled rows
  std::vector<std::string> vocab_tokens;
  std::vector<Encoded> train;
  std::vector<Encoded> dev;
};

// Reads and encodes o.train_path and o.dev_path with `vocab_tokens`, or
// with a vocabulary built from the training texts when it is empty. Draws
// no random numbers.
absl::StatusOr<TrainData> PrepareData(
    const TrainOptions& o, std::vector<std::string> vocab_tokens,
    const TokenizerOptions& tokenizer_options);

// config.json, model.safetensors (`weights`, in o.save_dtype), vocab.txt,
// tokenizer_config.json and train_log.json (`log`) in o.out_dir.
absl::Status WriteModelDir(const TrainOptions& o, const BertConfig& config,
                           const StateDict& weights,
                           const std::vector<std::string>& vocab_tokens,
                           const TokenizerOptions& tokenizer_options,
                           const nlohmann::json& log);

// A copy of the module's parameters (keys prefixed by `prefix`) in
// o.save_dtype, for the best epoch so far.
void SnapshotInto(const TrainOptions& o, torch::nn::Module& module,
                  const std::string& prefix, StateDict* out);

// Writes `text` to `path`; INTERNAL naming the path when it cannot.
absl::Status WriteText(const std::string& path, const std::string& text);

// "H:MM:SS".
std::string FormatDuration(double seconds);

// One step's loss (a scalar in the autograd graph) for a batch.
using StepLoss = std::function<torch::Tensor(const Batch&)>;
// Called after each epoch (0-based) with the mean training loss per example
// and the seconds since the loop started.
using EpochEnd =
    std::function<absl::Status(int epoch, double train_loss, double seconds)>;

// o.epochs epochs over `train` in length-bucketed batches drawn from
// `batch_rng`: learning rate with o.warmup_fraction linear warm-up then
// linear decay to 0, gradients of `clip` clipped to o.max_grad_norm, one
// AdamW step a batch, a progress line on stderr every 20 steps (the mean
// loss of those steps). Stops at the first error end_epoch returns.
absl::Status RunEpochs(const TrainOptions& o, const std::vector<Encoded>& train,
                       torch::optim::AdamW& optimizer,
                       const std::vector<torch::Tensor>& clip,
                       std::mt19937_64& batch_rng, const StepLoss& step_loss,
                       const EpochEnd& end_epoch);

}  // namespace bertology

#endif  // BERTOLOGY_TRAIN_TRAIN_COMMON_H_
