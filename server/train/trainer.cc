#include "server/train/trainer.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/state_dict.h"
#include "server/core/model/bert_model.h"
#include "server/core/status_macros.h"
#include "server/core/tokenizer/tokenizer.h"
#include "server/train/train_data.h"
#include "server/train/vocab_builder.h"

namespace bertology {
namespace {

// HF's BertPreTrainedModel._init_weights: N(0, 0.02) for linear and
// embedding weights, zero biases, LayerNorm weight 1 and bias 0.
void InitWeights(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters()) {
    const std::string& name = p.key();
    if (name.find("LayerNorm") != std::string::npos) {
      if (name.size() >= 6 && name.substr(name.size() - 6) == "weight") {
        p.value().fill_(1.0);
      } else {
        p.value().zero_();
      }
    } else if (name.size() >= 4 && name.substr(name.size() - 4) == "bias") {
      p.value().zero_();
    } else {
      p.value().normal_(0.0, 0.02);
    }
  }
}

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
    ForwardOptions run;
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

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string FormatDuration(double seconds) {
  int s = static_cast<int>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%d:%02d:%02d", s / 3600, s / 60 % 60,
                s % 60);
  return buf;
}

// The encoded train and dev sets, the label set and the vocabulary built
// from the training texts. Draws no random numbers.
struct TrainData {
  std::vector<std::string> labels;
  std::vector<std::string> vocab_tokens;
  std::vector<Encoded> train;
  std::vector<Encoded> dev;
};

absl::StatusOr<TrainData> PrepareData(const TrainOptions& o) {
  ASSIGN_OR_RETURN(auto train_rows, ReadPairDataset(o.train_path, o.columns));
  if (o.max_train_examples > 0 &&
      static_cast<int>(train_rows.size()) > o.max_train_examples) {
    train_rows.resize(o.max_train_examples);
  }
  if (train_rows.empty()) {
    return absl::InvalidArgumentError(o.train_path + ": no training rows");
  }
  std::vector<PairExample> dev_rows;
  if (!o.dev_path.empty()) {
    ASSIGN_OR_RETURN(dev_rows, ReadPairDataset(o.dev_path, o.columns));
  }
  const std::vector<std::string> labels = LabelSet(train_rows);
  std::map<std::string, int> label_ids;
  for (size_t i = 0; i < labels.size(); ++i) label_ids[labels[i]] = i;

  TrainData data;
  data.labels = labels;
  std::vector<std::string> texts;
  for (const auto& r : train_rows) {
    texts.push_back(r.text_a);
    if (!r.text_b.empty()) texts.push_back(r.text_b);
  }
  VocabBuilderOptions vb;
  vb.do_lower_case = o.do_lower_case;
  vb.min_word_count = o.min_word_count;
  ASSIGN_OR_RETURN(data.vocab_tokens, BuildVocab(texts, vb));
  ASSIGN_OR_RETURN(Vocab vocab,
                   Vocab::FromTokens(data.vocab_tokens, "built vocab"));
  TokenizerOptions tok_options;
  tok_options.do_lower_case = o.do_lower_case;
  Tokenizer tokenizer(vocab, tok_options);
  ASSIGN_OR_RETURN(data.train, EncodeAll(train_rows, tokenizer, label_ids,
                                         o.max_len, o.train_path));
  ASSIGN_OR_RETURN(data.dev, EncodeAll(dev_rows, tokenizer, label_ids,
                                       o.max_len, o.dev_path));
  return data;
}

// AdamW over every parameter of `modules`, with no
// weight decay on biases and LayerNorm, as in HF's run_glue. Draws no
// random numbers.
torch::optim::AdamW MakeOptimizer(
    const TrainOptions& o, const std::vector<torch::nn::Module*>& modules) {
  std::vector<torch::Tensor> decay, no_decay;
  auto add_params = [&](torch::nn::Module& m) {
    for (auto& p : m.named_parameters()) {
      bool nd = p.key().find("bias") != std::string::npos ||
                p.key().find("LayerNorm") != std::string::npos;
      (nd ? no_decay : decay).push_back(p.value());
    }
  };
  for (torch::nn::Module* m : modules) add_params(*m);
  torch::optim::AdamWOptions adam(o.learning_rate);
  adam.weight_decay(o.weight_decay).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay,
                      std::make_unique<torch::optim::AdamWOptions>(adam));
  auto adam_nd = adam;
  adam_nd.weight_decay(0.0);
  groups.emplace_back(no_decay,
                      std::make_unique<torch::optim::AdamWOptions>(adam_nd));
  return torch::optim::AdamW(groups, adam);
}

// config.json, model.safetensors, vocab.txt, tokenizer_config.json and
// train_log.json in o.out_dir.
absl::Status WriteOutputs(const TrainOptions& o, const BertConfig& config,
                          const StateDict& best,
                          const std::vector<std::string>& vocab_tokens,
                          const nlohmann::json& log, double best_dev,
                          int64_t train_examples) {
  std::filesystem::create_directories(o.out_dir);
  RETURN_IF_ERROR(WriteText(o.out_dir + "/config.json", config.ToJson()));
  RETURN_IF_ERROR(WriteSafetensors(best, o.out_dir + "/model.safetensors"));
  std::string vocab_text;
  for (const auto& t : vocab_tokens) absl::StrAppend(&vocab_text, t, "\n");
  RETURN_IF_ERROR(WriteText(o.out_dir + "/vocab.txt", vocab_text));
  nlohmann::json tok = {{"do_lower_case", o.do_lower_case},
                        {"model_max_length", o.max_len},
                        {"tokenizer_class", "BertTokenizer"}};
  RETURN_IF_ERROR(
      WriteText(o.out_dir + "/tokenizer_config.json", tok.dump(2) + "\n"));
  nlohmann::json summary = {{"epochs", log},
                            {"best_dev_accuracy", best_dev},
                            {"train_examples", train_examples},
                            {"seed", o.seed},
                            {"threads", torch::get_num_threads()}};
  RETURN_IF_ERROR(
      WriteText(o.out_dir + "/train_log.json", summary.dump(2) + "\n"));
  return absl::OkStatus();
}

}  // namespace

absl::Status Train(const TrainOptions& o) {
  ASSIGN_OR_RETURN(TrainData data, PrepareData(o));
  const std::vector<std::string>& labels = data.labels;
  const std::vector<std::string>& vocab_tokens = data.vocab_tokens;
  const auto& train = data.train;
  const auto& dev = data.dev;

  BertConfig config;
  config.vocab_size = static_cast<int>(vocab_tokens.size());
  config.hidden_size = o.hidden;
  config.num_hidden_layers = o.layers;
  config.num_attention_heads = o.heads;
  config.intermediate_size = o.intermediate;
  config.max_position_embeddings = std::max(o.max_len, 64);
  config.id2label = labels;
  config.architecture = "BertForSequenceClassification";
  if (o.hidden % o.heads != 0) {
    return absl::InvalidArgumentError("--hidden must be divisible by --heads");
  }

  torch::manual_seed(o.seed);
  BertDropout dropout{o.dropout, o.dropout};
  BertForSequenceClassification model(config, static_cast<int>(labels.size()),
                                      dropout);
  InitWeights(*model);
  model->train();

  const int aux_layer = o.aux_neighbour_layer;
  if (aux_layer < 0 || aux_layer > o.layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--aux_neighbour_layer must be in [0, ", o.layers, "]"));
  }
  // Only with the auxiliary objective: they draw from the seeded RNG.
  torch::nn::Linear aux_prev{nullptr}, aux_next{nullptr};
  if (aux_layer > 0) {
    aux_prev = torch::nn::Linear(o.hidden, config.vocab_size);
    aux_next = torch::nn::Linear(o.hidden, config.vocab_size);
    InitWeights(*aux_prev);
    InitWeights(*aux_next);
  }

  std::vector<torch::nn::Module*> trained = {model.ptr().get()};
  if (aux_layer > 0) {
    trained.push_back(aux_prev.ptr().get());
    trained.push_back(aux_next.ptr().get());
  }
  torch::optim::AdamW optimizer = MakeOptimizer(o, trained);

  const int64_t steps_per_epoch =
      (static_cast<int64_t>(train.size()) + o.batch_size - 1) / o.batch_size;
  const int64_t total_steps = steps_per_epoch * o.epochs;
  const int64_t warmup = static_cast<int64_t>(o.warmup_fraction * total_steps);
  std::mt19937_64 rng(o.seed);
  const bool tty = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  double best_dev = -1;
  StateDict best;
  nlohmann::json log = nlohmann::json::array();
  int64_t step = 0;
  int64_t seen = 0;

  std::fprintf(
      stderr,
      "train: %zu examples, dev %zu, vocab %d, labels %zu, %lld steps\n",
      train.size(), dev.size(), config.vocab_size, labels.size(),
      static_cast<long long>(total_steps));
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto batches = LengthBucketedBatches(train, o.batch_size, rng);
    double loss_sum = 0, window_sum = 0;
    int64_t loss_n = 0, window_n = 0;
    for (const std::vector<size_t>& batch_index : batches) {
      const size_t n = batch_index.size();
      Batch b = MakeBatch(train, batch_index, 0, n);
      double lr =
          step < warmup
              ? o.learning_rate * (step + 1) / std::max<int64_t>(1, warmup)
              : o.learning_rate * std::max<double>(0.0, total_steps - step) /
                    std::max<int64_t>(1, total_steps - warmup);
      for (auto& g : optimizer.param_groups()) {
        static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
      }
      ForwardOptions run;
      run.cls_only_last_layer = false;  // the trained numerics predate it
      if (aux_layer > 0) run.capture_hidden = {aux_layer};
      auto out = model->Run(b.ids, b.segments, b.mask, /*masks=*/{}, run);
      torch::Tensor loss =
          torch::nn::functional::cross_entropy(out.logits, b.labels);
      if (aux_layer > 0) {
        loss = loss + o.aux_weight * NeighbourLoss(out.hidden[aux_layer], b,
                                                   *aux_prev, *aux_next);
      }
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), o.max_grad_norm);
      optimizer.step();
      ++step;
      seen += static_cast<int64_t>(n);
      const double batch_loss = loss.item<double>();
      loss_sum += batch_loss * n;
      // The progress line shows the mean of the last 20 steps: the epoch's
      // running mean hides a collapse for most of an epoch.
      window_sum += batch_loss;
      ++window_n;
      loss_n += static_cast<int64_t>(n);
      if (step % 20 == 0 || step == total_steps) {
        double secs = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
        double rate = seen / std::max(secs, 1e-9);
        double eta = (total_steps - step) * o.batch_size / std::max(rate, 1e-9);
        std::fprintf(stderr,
                     "%sepoch %d/%d step %lld/%lld loss %.4f lr %.2e %.0f ex/s "
                     "elapsed %s ETA %s%s",
                     tty ? "\r" : "", epoch + 1, o.epochs,
                     static_cast<long long>(step),
                     static_cast<long long>(total_steps), window_sum / window_n,
                     lr, rate, FormatDuration(secs).c_str(),
                     FormatDuration(eta).c_str(), tty ? "   " : "\n");
        window_sum = 0;
        window_n = 0;
      }
    }
    std::vector<double> recall;
    double dev_acc = dev.empty()
                         ? 0
                         : Evaluate(*model, dev, 64,
                                    static_cast<int>(labels.size()), &recall);
    std::string recall_text;
    for (size_t g = 0; g < recall.size(); ++g) {
      absl::StrAppend(&recall_text, g ? ", " : "",
                      g < labels.size() ? labels[g] : "?", ": ",
                      absl::SixDigits(recall[g]));
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::fprintf(stderr,
                 "%sepoch %d: train loss %.4f, dev accuracy %.4f (%s); "
                 "recall by label: %s\n",
                 tty ? "\n" : "", epoch + 1, loss_sum / loss_n, dev_acc,
                 FormatDuration(secs).c_str(), recall_text.c_str());
    log.push_back({{"epoch", epoch + 1},
                   {"train_loss", loss_sum / loss_n},
                   {"dev_accuracy", dev_acc},
                   {"dev_recall_by_label", recall},
                   {"elapsed_s", secs}});
    if (dev.empty() || dev_acc > best_dev) {
      best_dev = dev_acc;
      best.clear();
      for (auto& p : model->named_parameters()) {
        torch::Tensor t = p.value().detach().clone();
        if (o.save_dtype == "F16") t = t.to(torch::kHalf);
        best[p.key()] = t;
      }
    }
  }

  RETURN_IF_ERROR(WriteOutputs(o, config, best, vocab_tokens, log, best_dev,
                               static_cast<int64_t>(train.size())));
  std::fprintf(stderr, "wrote %s (best dev accuracy %.4f)\n", o.out_dir.c_str(),
               best_dev);
  return absl::OkStatus();
}

}  // namespace bertology
