// Trains tiny models end to end on a generated TSV: the written directory
// loads as a served model, training learns, the auxiliary neighbour loss
// runs and is validated, and a fixed seed gives byte-identical weights;
// masked-LM pretraining writes a BertForMaskedLM that learned, and a
// classifier fine-tuned from it starts from its encoder.
#include "server/train/trainer.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/checkpoint.h"
#include "server/core/model/model.h"

namespace bertology {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Label "pos" when the query starts with one of the first five letters,
// "neg" otherwise: learnable in a few hundred steps by any working trainer,
// and impossible to score 0.9 on by guessing (classes are balanced).
void WriteTask(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream out(path);
  const std::string letters = "abcdefghij";
  for (int r = 0; r < rows; ++r) {
    std::string query, title;
    for (int i = 0; i < 4; ++i) query += letters[rng() % letters.size()];
    for (int i = 0; i < 5; ++i) title += letters[rng() % letters.size()];
    const bool pos = letters.find(query[0]) < 5;
    // Words separated by spaces: the tokenizer then sees one word per
    // letter, as it sees one per CJK character.
    std::string q, t;
    for (char c : query) q += std::string(1, c) + " ";
    for (char c : title) t += std::string(1, c) + " ";
    out << q << "\t" << t << "\t" << (pos ? "pos" : "neg") << "\n";
  }
}

// Every row is one letter repeated in both texts: a masked letter is any
// other token of its row, which a working masked-LM head learns in a few
// hundred steps, where a guess is right about one time in ten. (A harder
// corpus, text b = text a reversed, reached only 0.28 here in 8 epochs.)
void WriteRepeatCorpus(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream out(path);
  const std::string letters = "abcdefghij";
  for (int r = 0; r < rows; ++r) {
    const std::string c(1, letters[rng() % letters.size()]);
    out << c << " " << c << " " << c << " " << c << " \t" << c << " " << c
        << " " << c << " " << c << " " << c << " \tx\n";
  }
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    dir_ = std::filesystem::temp_directory_path() /
           ("bertology_trainer_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    WriteTask(dir_ / "train.tsv", 600, 1);
    WriteTask(dir_ / "dev.tsv", 200, 2);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TrainOptions Options(const std::string& out) const {
    TrainOptions o;
    o.train_path = dir_ / "train.tsv";
    o.dev_path = dir_ / "dev.tsv";
    o.out_dir = dir_ / out;
    o.layers = 2;
    o.heads = 2;
    o.hidden = 16;
    o.intermediate = 32;
    o.max_len = 16;
    o.min_word_count = 1;
    o.epochs = 6;
    o.batch_size = 16;
    o.learning_rate = 3e-3;
    o.dropout = 0.0;
    return o;
  }

  std::filesystem::path dir_;
};

TEST_F(TrainerTest, WritesAServableModelThatLearned) {
  TrainOptions o = Options("plain");
  ASSERT_TRUE(Train(o).ok());
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt",
                        "tokenizer_config.json", "train_log.json"}) {
    EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/" + f)) << f;
  }
  ModelOptions mo;
  mo.dir = o.out_dir;
  auto model = Model::Load(mo);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT((*model)->config().id2label, ElementsAre("neg", "pos"));
  EXPECT_EQ((*model)->config().num_hidden_layers, 2);

  auto log = nlohmann::json::parse(ReadFile(o.out_dir + "/train_log.json"));
  EXPECT_GE(log["best_dev_accuracy"].get<double>(), 0.9) << log.dump();
  ASSERT_EQ(log["epochs"].size(), 6u);
  // Recall is reported per label, in label order.
  EXPECT_EQ(log["epochs"][5]["dev_recall_by_label"].size(), 2u);
}

TEST_F(TrainerTest, NeighbourLossTrainsAndSameSeedGivesSameWeights) {
  TrainOptions a = Options("aux_a");
  a.aux_neighbour_layer = 1;
  a.epochs = 2;
  TrainOptions b = a;
  b.out_dir = (dir_ / "aux_b").string();
  ASSERT_TRUE(Train(a).ok());
  ASSERT_TRUE(Train(b).ok());
  const std::string wa = ReadFile(a.out_dir + "/model.safetensors");
  EXPECT_FALSE(wa.empty());
  EXPECT_EQ(wa, ReadFile(b.out_dir + "/model.safetensors"));
  // The auxiliary heads are not part of the written classifier.
  EXPECT_THAT(wa, Not(HasSubstr("aux")));
  // And the objective changes what is learned.
  TrainOptions c = a;
  c.out_dir = (dir_ / "no_aux").string();
  c.aux_neighbour_layer = 0;
  ASSERT_TRUE(Train(c).ok());
  EXPECT_NE(wa, ReadFile(c.out_dir + "/model.safetensors"));
}

TEST_F(TrainerTest, BadOptionsAndRowsNameTheFault) {
  TrainOptions o = Options("bad");
  o.aux_neighbour_layer = 3;  // only 2 layers
  absl::Status s = Train(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--aux_neighbour_layer"));

  std::ofstream(dir_ / "dev_bad.tsv") << "a \tb \tpos\nc \td \tmaybe\n";
  o = Options("bad");
  o.dev_path = dir_ / "dev_bad.tsv";
  s = Train(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dev_bad.tsv:2"));
  EXPECT_THAT(s.message(), HasSubstr("'maybe'"));
}

TEST_F(TrainerTest, MaskedLmPretrainsAndTheClassifierStartsFromIt) {
  WriteRepeatCorpus(dir_ / "mlm_train.tsv", 1500, 3);
  WriteRepeatCorpus(dir_ / "mlm_dev.tsv", 200, 4);
  TrainOptions m = Options("mlm");
  m.objective = "mlm";
  m.train_path = dir_ / "mlm_train.tsv";
  m.dev_path = dir_ / "mlm_dev.tsv";
  m.epochs = 4;
  m.mlm_probability = 0.2;
  ASSERT_TRUE(Train(m).ok());
  auto log = nlohmann::json::parse(ReadFile(m.out_dir + "/train_log.json"));
  EXPECT_EQ(log["objective"], "mlm");
  // Chance is about 0.1 (ten letters); measured 0.997.
  EXPECT_GE(log["best_dev_masked_token_accuracy"].get<double>(), 0.9)
      << log.dump();

  // HF's BertForMaskedLM: no pooler, the LM head under cls.predictions,
  // the decoder tied (not written); the server loads it as an encoder.
  auto ckpt = Checkpoint::Load(m.out_dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->config.architecture, "BertForMaskedLM");
  EXPECT_EQ(ckpt->head.architecture, "BertForMaskedLM");
  EXPECT_EQ(ckpt->head.kind, HeadKind::kEncoder);
  for (const char* key :
       {"cls.predictions.bias", "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.LayerNorm.weight",
        "bert.encoder.layer.1.output.dense.weight"}) {
    EXPECT_TRUE(ckpt->weights.count(key)) << key;
  }
  EXPECT_FALSE(ckpt->weights.count("bert.pooler.dense.weight"));
  EXPECT_FALSE(ckpt->weights.count("cls.predictions.decoder.weight"));
  ModelOptions mo;
  mo.dir = m.out_dir;
  auto served = Model::Load(mo);
  ASSERT_TRUE(served.ok()) << served.status();

  // Fine-tuning at a negligible learning rate keeps the encoder it started
  // from; the vocabulary is the starting point's, not one built anew.
  TrainOptions c = Options("from_mlm");
  c.init_from = m.out_dir;
  c.learning_rate = 1e-12;
  c.epochs = 1;
  c.layers = 5;  // ignored: the architecture is the starting point's
  ASSERT_TRUE(Train(c).ok());
  EXPECT_EQ(ReadFile(c.out_dir + "/vocab.txt"),
            ReadFile(m.out_dir + "/vocab.txt"));
  auto tuned = Checkpoint::Load(c.out_dir);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(tuned->config.architecture, "BertForSequenceClassification");
  EXPECT_EQ(tuned->config.num_hidden_layers, 2);
  EXPECT_TRUE(tuned->weights.count("bert.pooler.dense.weight"));
  for (const char* key : {"bert.embeddings.word_embeddings.weight",
                          "bert.encoder.layer.0.attention.self.query.weight",
                          "bert.encoder.layer.1.output.LayerNorm.weight"}) {
    EXPECT_TRUE(
        torch::allclose(tuned->weights.at(key), ckpt->weights.at(key), 0, 1e-6))
        << key;
  }
  auto tuned_log =
      nlohmann::json::parse(ReadFile(c.out_dir + "/train_log.json"));
  EXPECT_EQ(tuned_log["init_from"], m.out_dir);

  // A real learning rate moves it, and the classifier learns the task.
  TrainOptions d = Options("from_mlm_trained");
  d.init_from = m.out_dir;
  d.train_path = dir_ / "train.tsv";
  ASSERT_TRUE(Train(d).ok());
  // The task's letters are the corpus' letters, so the vocabulary covers it.
  auto d_log = nlohmann::json::parse(ReadFile(d.out_dir + "/train_log.json"));
  EXPECT_GE(d_log["best_dev_accuracy"].get<double>(), 0.9) << d_log.dump();
}

TEST_F(TrainerTest, PretrainingOptionsAreChecked) {
  TrainOptions o = Options("x");
  o.objective = "nsp";
  EXPECT_THAT(Train(o).message(), HasSubstr("--objective=nsp"));
  o.objective = "mlm";
  o.init_from = (dir_ / "nowhere").string();
  EXPECT_THAT(Train(o).message(), HasSubstr("--init_from"));
  o = Options("x");
  o.init_from = (dir_ / "nowhere").string();
  absl::Status s = Train(o);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("nowhere"));
  o = Options("x");
  o.objective = "mlm";
  o.mlm_probability = 1.5;
  EXPECT_THAT(Train(o).message(), HasSubstr("--mlm_probability"));
}

}  // namespace
}  // namespace bertology
