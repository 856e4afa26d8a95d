#include "server/train/train_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/train/vocab_builder.h"

namespace bertology {

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

torch::optim::AdamW MakeOptimizer(
    const TrainOptions& o, const std::vector<torch::nn::Module*>& modules) {
  std::vector<torch::Tensor> decay, no_decay;
  for (torch::nn::Module* m : modules) {
    for (auto& p : m->named_parameters()) {
      bool nd = p.key().find("bias") != std::string::npos ||
                p.key().find("LayerNorm") != std::string::npos;
      (nd ? no_decay : decay).push_back(p.value());
    }
  }
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

absl::StatusOr<TrainData> PrepareData(
    const TrainOptions& o, std::vector<std::string> vocab_tokens,
    const TokenizerOptions& tokenizer_options) {
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
  TrainData data;
  data.labels = LabelSet(train_rows);
  std::map<std::string, int> label_ids;
  for (size_t i = 0; i < data.labels.size(); ++i) label_ids[data.labels[i]] = i;
  if (vocab_tokens.empty()) {
    std::vector<std::string> texts;
    for (const auto& r : train_rows) {
      texts.push_back(r.text_a);
      if (!r.text_b.empty()) texts.push_back(r.text_b);
    }
    VocabBuilderOptions vb;
    vb.do_lower_case = tokenizer_options.do_lower_case;
    vb.min_word_count = o.min_word_count;
    ASSIGN_OR_RETURN(vocab_tokens, BuildVocab(texts, vb));
  }
  data.vocab_tokens = std::move(vocab_tokens);
  ASSIGN_OR_RETURN(Vocab vocab, Vocab::FromTokens(data.vocab_tokens, "vocab"));
  BertTokenizer tokenizer(vocab, tokenizer_options);
  ASSIGN_OR_RETURN(data.train, EncodeAll(train_rows, tokenizer, label_ids,
                                         o.max_len, o.train_path));
  ASSIGN_OR_RETURN(data.dev, EncodeAll(dev_rows, tokenizer, label_ids,
                                       o.max_len, o.dev_path));
  return data;
}

absl::Status WriteModelDir(const TrainOptions& o, const BertConfig& config,
                           const StateDict& weights,
                           const std::vector<std::string>& vocab_tokens,
                           const TokenizerOptions& tokenizer_options,
                           const nlohmann::json& log) {
  std::filesystem::create_directories(o.out_dir);
  RETURN_IF_ERROR(WriteText(o.out_dir + "/config.json", config.ToJson()));
  RETURN_IF_ERROR(WriteSafetensors(weights, o.out_dir + "/model.safetensors"));
  std::string vocab_text;
  for (const auto& t : vocab_tokens) absl::StrAppend(&vocab_text, t, "\n");
  RETURN_IF_ERROR(WriteText(o.out_dir + "/vocab.txt", vocab_text));
  nlohmann::json tok = {{"do_lower_case", tokenizer_options.do_lower_case},
                        {"model_max_length", o.max_len},
                        {"tokenizer_class", "BertTokenizer"}};
  RETURN_IF_ERROR(
      WriteText(o.out_dir + "/tokenizer_config.json", tok.dump(2) + "\n"));
  return WriteText(o.out_dir + "/train_log.json", log.dump(2) + "\n");
}

void SnapshotInto(const TrainOptions& o, torch::nn::Module& module,
                  const std::string& prefix, StateDict* out) {
  for (auto& p : module.named_parameters()) {
    torch::Tensor t = p.value().detach().clone();
    if (o.save_dtype == "F16") t = t.to(torch::kHalf);
    (*out)[prefix + p.key()] = t;
  }
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

absl::Status RunEpochs(const TrainOptions& o, const std::vector<Encoded>& train,
                       torch::optim::AdamW& optimizer,
                       const std::vector<torch::Tensor>& clip,
                       std::mt19937_64& batch_rng, const StepLoss& step_loss,
                       const EpochEnd& end_epoch) {
  const int64_t steps_per_epoch =
      (static_cast<int64_t>(train.size()) + o.batch_size - 1) / o.batch_size;
  const int64_t total_steps = steps_per_epoch * o.epochs;
  const int64_t warmup = static_cast<int64_t>(o.warmup_fraction * total_steps);
  const bool tty = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  int64_t step = 0;
  int64_t seen = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto batches = LengthBucketedBatches(train, o.batch_size, batch_rng);
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
      torch::Tensor loss = step_loss(b);
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(clip, o.max_grad_norm);
      optimizer.step();
      ++step;
      seen += static_cast<int64_t>(n);
      const double batch_loss = loss.item<double>();
      loss_sum += batch_loss * n;
      loss_n += static_cast<int64_t>(n);
      // The progress line shows the mean of the last 20 steps: the epoch's
      // running mean hides a collapse for most of an epoch.
      window_sum += batch_loss;
      ++window_n;
      if (step % 20 == 0 || step == total_steps) {
        const double secs = elapsed();
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
    if (tty) std::fprintf(stderr, "\n");
    absl::Status st = end_epoch(epoch, loss_sum / loss_n, elapsed());
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace bertology
