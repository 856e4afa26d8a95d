// Masked-LM pretraining (TrainOptions::objective "mlm"): the encoder the
// server runs, HF's BertLMPredictionHead on its output, BERT's 15% / 80-10-10
// corruption. Its output is the starting point the default classifier is
// fine-tuned from (scripts/train_default_model.sh).
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/model/bert_model.h"
#include "server/core/tokenizer/vocab.h"
#include "server/train/masked_lm.h"
#include "server/train/train_common.h"
#include "server/train/train_data.h"
#include "server/train/trainer.h"

namespace bertology {
namespace {

// Masked-token accuracy over `data` in batches of `batch_size` in length
// order, corrupted by a generator seeded with `seed` (the same tokens every
// epoch); the mean loss per chosen token goes to *loss.
double EvaluateMlm(BertForSequenceClassificationImpl& model,
                   BertLMHeadImpl& head, const torch::Tensor& word_embeddings,
                   const std::vector<Encoded>& data, const MlmTokens& tokens,
                   const TrainOptions& o, double* loss) {
  *loss = 0;
  if (data.empty()) return 0;
  model.eval();
  head.eval();
  torch::NoGradGuard no_grad;
  std::vector<size_t> index(data.size());
  std::iota(index.begin(), index.end(), 0);
  std::stable_sort(index.begin(), index.end(), [&](size_t a, size_t b) {
    return data[a].ids.size() < data[b].ids.size();
  });
  std::mt19937_64 rng(o.seed + 1);
  const int layers = model.num_layers();
  int64_t correct = 0, predicted = 0;
  double loss_sum = 0;
  for (size_t i = 0; i < data.size(); i += 64) {
    Batch b = MakeBatch(data, index, i, std::min(data.size(), i + 64));
    MlmBatch m = MaskTokens(b, tokens, o.mlm_probability, rng);
    EngineOptions run;
    run.compute_logits = false;
    run.cls_only_last_layer = false;
    run.capture_hidden = {layers};
    auto out = model.Run(m.ids, b.segments, b.mask, /*masks=*/{}, run);
    MlmLoss l =
        MaskedLmLoss(out.hidden[layers], m.targets, head, word_embeddings);
    correct += l.correct;
    predicted += l.predicted;
    loss_sum += l.loss.item<double>() * l.predicted;
  }
  model.train();
  head.train();
  *loss = predicted ? loss_sum / predicted : 0;
  return predicted ? static_cast<double>(correct) / predicted : 0;
}

absl::StatusOr<MlmTokens> MlmSpecialTokens(
    const std::vector<std::string>& vocab_tokens) {
  ASSIGN_OR_RETURN(Vocab vocab, Vocab::FromTokens(vocab_tokens, "vocab"));
  MlmTokens tokens;
  tokens.mask_id = vocab.Id("[MASK]");
  if (tokens.mask_id < 0) {
    return absl::InvalidArgumentError("the vocabulary has no [MASK] token");
  }
  tokens.vocab_size = vocab.size();
  tokens.special_ids = {vocab.cls_id(), vocab.sep_id(), vocab.pad_id()};
  return tokens;
}

}  // namespace

absl::Status TrainMaskedLm(const TrainOptions& o) {
  TokenizerOptions tokenizer_options;
  tokenizer_options.do_lower_case = o.do_lower_case;
  ASSIGN_OR_RETURN(TrainData data, PrepareData(o, {}, tokenizer_options));
  ASSIGN_OR_RETURN(MlmTokens tokens, MlmSpecialTokens(data.vocab_tokens));
  if (!(o.mlm_probability > 0 && o.mlm_probability < 1)) {
    return absl::InvalidArgumentError("--mlm_probability must be in (0, 1)");
  }
  if (o.hidden % o.heads != 0) {
    return absl::InvalidArgumentError("--hidden must be divisible by --heads");
  }
  if (o.aux_neighbour_layer != 0) {
    return absl::InvalidArgumentError(
        "--aux_neighbour_layer is for --objective=classify");
  }
  BertConfig config;
  config.vocab_size = tokens.vocab_size;
  config.hidden_size = o.hidden;
  config.num_hidden_layers = o.layers;
  config.num_attention_heads = o.heads;
  config.intermediate_size = o.intermediate;
  config.max_position_embeddings = std::max(o.max_len, 64);
  config.architecture = "BertForMaskedLM";

  torch::manual_seed(o.seed);
  BertDropout dropout{o.dropout, o.dropout};
  // The encoder alone (HF's BertForMaskedLM has no pooler).
  BertForSequenceClassification model(config, /*num_labels=*/0, dropout,
                                      HeadKind::kEncoder);
  BertLMHead head(config);
  InitWeights(*model);
  InitWeights(*head);
  model->train();
  head->train();
  const torch::Tensor word_embeddings =
      model->named_parameters()["bert.embeddings.word_embeddings.weight"];
  torch::optim::AdamW optimizer =
      MakeOptimizer(o, {model.ptr().get(), head.ptr().get()});
  std::vector<torch::Tensor> clip = model->parameters();
  for (const auto& p : head->parameters()) clip.push_back(p);

  std::fprintf(stderr, "mlm: %zu sequences, dev %zu, vocab %d\n",
               data.train.size(), data.dev.size(), config.vocab_size);
  std::mt19937_64 mask_rng(o.seed + 2);
  const int layers = o.layers;
  auto step_loss = [&](const Batch& b) {
    MlmBatch m = MaskTokens(b, tokens, o.mlm_probability, mask_rng);
    EngineOptions run;
    run.compute_logits = false;
    run.cls_only_last_layer = false;
    run.capture_hidden = {layers};
    auto out = model->Run(m.ids, b.segments, b.mask, /*masks=*/{}, run);
    return MaskedLmLoss(out.hidden[layers], m.targets, *head, word_embeddings)
        .loss;
  };
  double best_dev = -1;
  StateDict best;
  nlohmann::json epochs = nlohmann::json::array();
  auto end_epoch = [&](int epoch, double train_loss, double secs) {
    double dev_loss = 0;
    const double dev_acc = EvaluateMlm(*model, *head, word_embeddings, data.dev,
                                       tokens, o, &dev_loss);
    std::fprintf(stderr,
                 "epoch %d: train loss %.4f, dev masked-token accuracy %.4f, "
                 "dev loss %.4f (%s)\n",
                 epoch + 1, train_loss, dev_acc, dev_loss,
                 FormatDuration(secs).c_str());
    epochs.push_back({{"epoch", epoch + 1},
                      {"train_loss", train_loss},
                      {"dev_masked_token_accuracy", dev_acc},
                      {"dev_loss", dev_loss},
                      {"elapsed_s", secs}});
    if (data.dev.empty() || dev_acc > best_dev) {
      best_dev = dev_acc;
      best.clear();
      SnapshotInto(o, *model, "", &best);
      SnapshotInto(o, *head, "cls.predictions.", &best);
    }
    return absl::OkStatus();
  };
  std::mt19937_64 batch_rng(o.seed);
  RETURN_IF_ERROR(RunEpochs(o, data.train, optimizer, clip, batch_rng,
                            step_loss, end_epoch));

  nlohmann::json log = {
      {"objective", "mlm"},
      {"epochs", epochs},
      {"best_dev_masked_token_accuracy", best_dev},
      {"mlm_probability", o.mlm_probability},
      {"train_examples", static_cast<int64_t>(data.train.size())},
      {"seed", o.seed},
      {"threads", torch::get_num_threads()}};
  RETURN_IF_ERROR(WriteModelDir(o, config, best, data.vocab_tokens,
                                tokenizer_options, log));
  std::fprintf(stderr, "wrote %s (best dev masked-token accuracy %.4f)\n",
               o.out_dir.c_str(), best_dev);
  return absl::OkStatus();
}

}  // namespace bertology
