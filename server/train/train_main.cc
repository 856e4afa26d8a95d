// bertology-train: trains a BertForSequenceClassification (from scratch or
// from a starting point) or pretrains a BertForMaskedLM on a TSV/CSV/JSONL
// of text pairs and writes an HF model directory.
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "server/core/process/blas_core.h"
#include "server/train/trainer.h"

ABSL_FLAG(std::string, objective, "classify",
          "classify (a sequence classifier on labelled pairs) or mlm "
          "(masked-language-model pretraining; labels unused).");
ABSL_FLAG(std::string, init_from, "",
          "classify: fine-tune from this model directory (its vocabulary, "
          "tokenizer and architecture; e.g. an --objective=mlm output) "
          "instead of random initialisation.");
ABSL_FLAG(double, mlm_probability, 0.15,
          "mlm: share of tokens chosen for prediction (80% [MASK], 10% "
          "random, 10% unchanged).");
ABSL_FLAG(std::string, train, "", "Training set (TSV, CSV or JSONL).");
ABSL_FLAG(std::string, dev, "", "Dev set, evaluated after every epoch.");
ABSL_FLAG(std::string, out, "", "Output model directory.");
ABSL_FLAG(std::string, text_a, "0",
          "Column (name or 0-based index) of text a.");
ABSL_FLAG(std::string, text_b, "1", "Column of text b ('' for single texts).");
ABSL_FLAG(std::string, label, "2", "Column of the label.");
ABSL_FLAG(int, layers, 12, "Encoder layers.");
ABSL_FLAG(int, heads, 12, "Attention heads per layer.");
ABSL_FLAG(int, hidden, 128, "Hidden size.");
ABSL_FLAG(int, intermediate, 512, "Feed-forward size.");
ABSL_FLAG(int, max_len, 64, "Maximum tokens per pair.");
ABSL_FLAG(bool, lower_case, true, "Lower-case and strip accents.");
ABSL_FLAG(int, epochs, 3, "Epochs.");
ABSL_FLAG(int, batch_size, 32, "Examples per step.");
ABSL_FLAG(double, lr, 5e-4, "Peak learning rate (AdamW).");
ABSL_FLAG(double, warmup, 0.06, "Fraction of steps of linear warm-up.");
ABSL_FLAG(double, weight_decay, 0.01, "AdamW weight decay.");
ABSL_FLAG(double, dropout, 0.1, "Hidden and attention dropout.");
ABSL_FLAG(uint64_t, seed, 1, "Random seed (init, shuffling, dropout).");
ABSL_FLAG(int, max_train_examples, 0, "Use at most this many rows (0: all).");
ABSL_FLAG(std::string, save_dtype, "F32", "F32 or F16 weights on disk.");
ABSL_FLAG(int, aux_neighbour_layer, 0,
          "Train heads predicting each token's neighbours from this layer's "
          "output too (0: off); see trainer.h.");
ABSL_FLAG(double, aux_weight, 1.0, "Weight of that auxiliary loss.");
ABSL_FLAG(int, threads, 2, "libtorch intra-op threads.");

int main(int argc, char** argv) {
  // Before anything else: it may exec this program again (blas_core.h).
  bertology::ReexecWithFixedOpenBlasCore(argv);
  absl::SetProgramUsageMessage(
      "Trains a BERT classifier on labelled pairs, or pretrains a masked LM.\n"
      "  bertology-train --train train.tsv --dev dev.tsv --out DIR\n"
      "  bertology-train --objective=mlm --train train.tsv --dev dev.tsv "
      "--out MLM_DIR\n"
      "  bertology-train --init_from MLM_DIR --train train.tsv --dev dev.tsv "
      "--out DIR");
  absl::ParseCommandLine(argc, argv);
  bertology::TrainOptions o;
  o.objective = absl::GetFlag(FLAGS_objective);
  o.init_from = absl::GetFlag(FLAGS_init_from);
  o.mlm_probability = absl::GetFlag(FLAGS_mlm_probability);
  o.train_path = absl::GetFlag(FLAGS_train);
  o.dev_path = absl::GetFlag(FLAGS_dev);
  o.out_dir = absl::GetFlag(FLAGS_out);
  if (o.train_path.empty() || o.out_dir.empty()) {
    std::fprintf(stderr, "bertology-train: --train and --out are required\n");
    return 2;
  }
  o.columns.text_a = absl::GetFlag(FLAGS_text_a);
  o.columns.text_b = absl::GetFlag(FLAGS_text_b);
  o.columns.label = absl::GetFlag(FLAGS_label);
  o.layers = absl::GetFlag(FLAGS_layers);
  o.heads = absl::GetFlag(FLAGS_heads);
  o.hidden = absl::GetFlag(FLAGS_hidden);
  o.intermediate = absl::GetFlag(FLAGS_intermediate);
  o.max_len = absl::GetFlag(FLAGS_max_len);
  o.do_lower_case = absl::GetFlag(FLAGS_lower_case);
  o.epochs = absl::GetFlag(FLAGS_epochs);
  o.batch_size = absl::GetFlag(FLAGS_batch_size);
  o.learning_rate = absl::GetFlag(FLAGS_lr);
  o.warmup_fraction = absl::GetFlag(FLAGS_warmup);
  o.weight_decay = absl::GetFlag(FLAGS_weight_decay);
  o.dropout = absl::GetFlag(FLAGS_dropout);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.max_train_examples = absl::GetFlag(FLAGS_max_train_examples);
  o.save_dtype = absl::GetFlag(FLAGS_save_dtype);
  o.aux_neighbour_layer = absl::GetFlag(FLAGS_aux_neighbour_layer);
  o.aux_weight = absl::GetFlag(FLAGS_aux_weight);
  torch::set_num_threads(absl::GetFlag(FLAGS_threads));
  absl::Status st = bertology::Train(o);
  if (!st.ok()) {
    std::fprintf(stderr, "bertology-train: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
