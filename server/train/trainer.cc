#include "server/train/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/core/model/bert_model.h"
#include "server/train/starting_point.h"
#include "server/train/train_common.h"
#include "server/train/train_data.h"

namespace bertology {
namespace {

// Cross-entropy of predicting, at every real token, the id of the token
// before it (from aux_prev) and after it (from aux_next); positions without
// such a neighbour (first token, last real token, padding) are ignored.
torch::Tensor NeighbourLoss(const torch::Tensor& hidden, const Batch& b,
                            torch::nn::LinearImpl& aux_prev,
                            torch::nn::LinearImpl& aux_next) {
  using torch::indexing::Slice;
  const int64_t vocab = aux_prev.options.out_features();
  auto ignore = torch::full_like(b.ids, -100);
  auto real = b.mask.to(torch::kBool);
  // prev_target[t] = ids[t-1] where t and t-1 are real tokens.
  auto prev_target = ignore.clone();
  prev_target.index_put_({Slice(), Slice(1)},
                         b.ids.index({Slice(), Slice(0, -1)}));
  prev_target.masked_fill_(~real, -100);
  prev_target.index_put_({Slice(), 0}, -100);
  // next_target[t] = ids[t+1] where t+1 is a real token.
  auto next_target = ignore.clone();
  next_target.index_put_({Slice(), Slice(0, -1)},
                         b.ids.index({Slice(), Slice(1)}));
  auto next_real = torch::zeros_like(real);
  next_real.index_put_({Slice(), Slice(0, -1)},
                       real.index({Slice(), Slice(1)}));
  next_target.masked_fill_(~next_real, -100);
  namespace F = torch::nn::functional;
  auto opts = F::CrossEntropyFuncOptions().ignore_index(-100);
  return F::cross_entropy(aux_prev.forward(hidden).reshape({-1, vocab}),
                          prev_target.reshape({-1}), opts) +
         F::cross_entropy(aux_next.forward(hidden).reshape({-1, vocab}),
                          next_target.reshape({-1}), opts);
}

// Dev accuracy, plus recall per label (how many of each gold label were
// predicted right), which shows what a plateaued model has not learned.
double Evaluate(BertForSequenceClassificationImpl& model,
                const std::vector<Encoded>& data, int batch_size,
                int num_labels, std::vector<double>* recall) {
  recall->clear();
  if (data.empty()) return 0;
  std::vector<int64_t> gold_n(num_labels, 0), gold_ok(num_labels, 0);
  model.eval();
  torch::NoGradGuard no_grad;
  std::vector<size_t> index(data.size());
  std::iota(index.begin(), index.end(), 0);
  std::sort(index.begin(), index.end(), [&](size_t a, size_t b) {
    return data[a].ids.size() < data[b].ids.size();
  });
  for (size_t i = 0; i < data.size(); i += batch_size) {
    size_t end = std::min(data.size(), i + batch_size);
    Batch b = MakeBatch(data, index, i, end);
    EngineOptions run;
    run.cls_only_last_layer = false;  // the trained numerics predate it
    auto out = model.Run(b.ids, b.segments, b.mask, /*masks=*/{}, run);
    torch::Tensor pred = out.logits.argmax(-1);
    auto p = pred.accessor<int64_t, 1>();
    for (size_t r = 0; r < end - i; ++r) {
      const int g = data[index[i + r]].label;
      ++gold_n[g];
      gold_ok[g] += p[r] == g;
    }
  }
  int64_t correct = 0;
  for (int g = 0; g < num_labels; ++g) {
    correct += gold_ok[g];
    recall->push_back(gold_n[g] ? static_cast<double>(gold_ok[g]) / gold_n[g]
                                : 0.0);
  }
  model.train();
  return static_cast<double>(correct) / data.size();
}

BertConfig ConfigFromOptions(const TrainOptions& o, int vocab_size) {
  BertConfig config;
  config.vocab_size = vocab_size;
  config.hidden_size = o.hidden;
  config.num_hidden_layers = o.layers;
  config.num_attention_heads = o.heads;
  config.intermediate_size = o.intermediate;
  config.max_position_embeddings = std::max(o.max_len, 64);
  return config;
}

absl::Status TrainClassifier(const TrainOptions& o) {
  // With a starting point: its vocabulary, tokenizer and architecture.
  std::optional<StartingPoint> start;
  TokenizerOptions tokenizer_options;
  tokenizer_options.do_lower_case = o.do_lower_case;
  std::vector<std::string> vocab_tokens;
  if (!o.init_from.empty()) {
    ASSIGN_OR_RETURN(start, LoadStartingPoint(o.init_from));
    tokenizer_options = start->checkpoint.tokenizer;
    vocab_tokens = start->vocab_tokens;
    if (o.max_len > start->checkpoint.config.max_position_embeddings) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max_len ", o.max_len, " exceeds ", o.init_from,
                       "'s max_position_embeddings ",
                       start->checkpoint.config.max_position_embeddings));
    }
  }
  ASSIGN_OR_RETURN(TrainData data,
                   PrepareData(o, std::move(vocab_tokens), tokenizer_options));
  const std::vector<std::string>& labels = data.labels;
  const auto& train = data.train;
  const auto& dev = data.dev;

  BertConfig config =
      start ? start->checkpoint.config
            : ConfigFromOptions(o, static_cast<int>(data.vocab_tokens.size()));
  config.id2label = labels;
  config.architecture = "BertForSequenceClassification";
  if (config.hidden_size % config.num_attention_heads != 0) {
    return absl::InvalidArgumentError("--hidden must be divisible by --heads");
  }
  const int num_layers = config.num_hidden_layers;

  torch::manual_seed(o.seed);
  BertDropout dropout{o.dropout, o.dropout};
  BertForSequenceClassification model(config, static_cast<int>(labels.size()),
                                      dropout);
  InitWeights(*model);
  if (start) RETURN_IF_ERROR(CopyStartingWeights(*start, model.ptr().get()));
  model->train();

  const int aux_layer = o.aux_neighbour_layer;
  if (aux_layer < 0 || aux_layer > num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--aux_neighbour_layer must be in [0, ", num_layers, "]"));
  }
  // Only with the auxiliary objective: they draw from the seeded RNG.
  torch::nn::Linear aux_prev{nullptr}, aux_next{nullptr};
  std::vector<torch::nn::Module*> trained = {model.ptr().get()};
  if (aux_layer > 0) {
    aux_prev = torch::nn::Linear(config.hidden_size, config.vocab_size);
    aux_next = torch::nn::Linear(config.hidden_size, config.vocab_size);
    InitWeights(*aux_prev);
    InitWeights(*aux_next);
    trained.push_back(aux_prev.ptr().get());
    trained.push_back(aux_next.ptr().get());
  }
  torch::optim::AdamW optimizer = MakeOptimizer(o, trained);

  std::fprintf(stderr,
               "train: %zu examples, dev %zu, vocab %d, labels %zu%s%s\n",
               train.size(), dev.size(), config.vocab_size, labels.size(),
               start ? ", from " : "", o.init_from.c_str());
  auto step_loss = [&](const Batch& b) {
    EngineOptions run;
    run.cls_only_last_layer = false;  // the trained numerics predate it
    if (aux_layer > 0) run.capture_hidden = {aux_layer};
    auto out = model->Run(b.ids, b.segments, b.mask, /*masks=*/{}, run);
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(out.logits, b.labels);
    if (aux_layer > 0) {
      loss = loss + o.aux_weight * NeighbourLoss(out.hidden[aux_layer], b,
                                                 *aux_prev, *aux_next);
    }
    return loss;
  };
  double best_dev = -1;
  StateDict best;
  nlohmann::json epochs = nlohmann::json::array();
  auto end_epoch = [&](int epoch, double train_loss, double secs) {
    std::vector<double> recall;
    double dev_acc = dev.empty()
                         ? 0
                         : Evaluate(*model, dev, 64,
                                    static_cast<int>(labels.size()), &recall);
    std::string recall_text;
    for (size_t g = 0; g < recall.size(); ++g) {
      absl::StrAppend(&recall_text, g ? ", " : "", labels[g], ": ",
                      absl::SixDigits(recall[g]));
    }
    std::fprintf(stderr,
                 "epoch %d: train loss %.4f, dev accuracy %.4f (%s); "
                 "recall by label: %s\n",
                 epoch + 1, train_loss, dev_acc, FormatDuration(secs).c_str(),
                 recall_text.c_str());
    epochs.push_back({{"epoch", epoch + 1},
                      {"train_loss", train_loss},
                      {"dev_accuracy", dev_acc},
                      {"dev_recall_by_label", recall},
                      {"elapsed_s", secs}});
    if (dev.empty() || dev_acc > best_dev) {
      best_dev = dev_acc;
      best.clear();
      SnapshotInto(o, *model, "", &best);
    }
    return absl::OkStatus();
  };
  std::mt19937_64 rng(o.seed);
  RETURN_IF_ERROR(RunEpochs(o, train, optimizer, model->parameters(), rng,
                            step_loss, end_epoch));

  nlohmann::json log = {{"objective", "classify"},
                        {"epochs", epochs},
                        {"best_dev_accuracy", best_dev},
                        {"train_examples", static_cast<int64_t>(train.size())},
                        {"seed", o.seed},
                        {"threads", torch::get_num_threads()}};
  if (start) log["init_from"] = o.init_from;
  RETURN_IF_ERROR(WriteModelDir(o, config, best, data.vocab_tokens,
                                tokenizer_options, log));
  std::fprintf(stderr, "wrote %s (best dev accuracy %.4f)\n", o.out_dir.c_str(),
               best_dev);
  return absl::OkStatus();
}

}  // namespace

absl::Status Train(const TrainOptions& o) {
  if (o.objective == "mlm") {
    if (!o.init_from.empty()) {
      return absl::InvalidArgumentError(
          "--init_from is for --objective=classify (pretraining starts from "
          "random initialisation)");
    }
    return TrainMaskedLm(o);
  }
  if (o.objective != "classify") {
    return absl::InvalidArgumentError(
        absl::StrCat("--objective=", o.objective, " is not classify or mlm"));
  }
  return TrainClassifier(o);
}

}  // namespace bertology
