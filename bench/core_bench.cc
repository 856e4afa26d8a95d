// In-process measurements of one model (issue 6, items a-c):
//   sweep:   the single-head sweep plus baseline, (a) the naive way (one full
//            forward pass per mask over the data, batches in data order, as
//            a PyTorch loop does) vs (b) SweepExecutor as the server runs
//            it; both count correct predictions, which must agree.
//   encoder: FLOP/s of one forward pass at [batch, tokens] as a fraction of
//            the sgemm FLOP/s of the same matrix products, in the same run.
// Writes one JSON object (--json_out) that bench/report.py tabulates.
// With --make_random_model it only writes the random BERT-base directory.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/bench_util.h"
#include "bench/random_model.h"
#include "common/mask_generators.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/bert_config.h"
#include "server/core/model/engine.h"
#include "server/core/model/model.h"
#include "server/core/process/blas_core.h"
#include "server/core/process/threading.h"
#include "server/core/sweep/sweep.h"

ABSL_FLAG(std::string, model, "models/querytitle-zh-tiny", "HF model dir.");
ABSL_FLAG(std::string, name, "", "Label of the model in the report.");
ABSL_FLAG(std::string, data, "", "TSV text_a, text_b, label.");
ABSL_FLAG(int, examples, 64, "Examples scored per mask.");
ABSL_FLAG(int, masks, 0,
          "Single-head masks (an even stride over all L*H; "
          "0: all).");
ABSL_FLAG(int, batch, 32, "Rows per forward pass, naive loop and engine.");
ABSL_FLAG(int, engine_batch, 0,
          "Also time the engine at this max_batch_rows (0: skip).");
ABSL_FLAG(int, workers, 0,
          "The engine's SweepOptions::workers (0: AutoSweepWorkers, as the "
          "server). When that is not 1 the engine is also timed at 1.");
ABSL_FLAG(int, max_seq_len, 128, "Tokens per example at most.");
ABSL_FLAG(std::string, dtype, "auto",
          "ModelOptions::dtype: auto (F32 on CPU), F32 or BF16 (the opt-in "
          "BF16 path; its correct counts are compared with F32's by "
          "bench/report.py).");
ABSL_FLAG(bool, lever_shares, true,
          "Also time the engine with token packing off, and with head-output "
          "reuse off (SweepOptions), side by side: each lever's share.");
ABSL_FLAG(bool, print_openblas_core, false,
          "Print the OpenBLAS kernel set in use (after blas_core.h's fix) and "
          "exit; empty when the BLAS is not OpenBLAS.");
ABSL_FLAG(bool, worker_share, true,
          "When the engine runs on several workers, also time it on one.");
ABSL_FLAG(int, threads, 0, "libtorch intra-op threads (0: default).");
ABSL_FLAG(int, openblas_threads, 0, "OpenBLAS pool size (0: leave).");
ABSL_FLAG(int, eff_batch, 8, "Encoder efficiency: rows.");
ABSL_FLAG(int, eff_tokens, 128, "Encoder efficiency: tokens per row.");
ABSL_FLAG(int, eff_reps, 5, "Encoder efficiency: timed passes.");
ABSL_FLAG(bool, sweep, true, "Run the sweep comparison.");
ABSL_FLAG(bool, naive, true,
          "Run the naive loop of the sweep comparison (false: the engine "
          "alone, for profiling; naive_* and ratio are then absent).");
ABSL_FLAG(std::string, json_out, "", "Where to write the JSON result.");
ABSL_FLAG(std::string, device, "cpu", "ModelOptions::device: cpu, cuda[:N].");
ABSL_FLAG(std::string, attention, "auto",
          "ModelOptions::attention: auto, explicit or fused.");
ABSL_FLAG(std::string, make_random_model, "",
          "Write a random BERT-base dir here (vocab and labels from --model) "
          "and exit.");

namespace bertology::bench {
namespace {

using nlohmann::json;

int Argmax(const torch::Tensor& logits, int row) {
  auto a = logits.accessor<float, 2>();
  int best = 0;
  for (int c = 1; c < logits.size(1); ++c) {
    if (a[row][c] > a[row][best]) best = c;
  }
  return best;
}

// Padded tokens per real token when `lengths` are cut into batches of
// `batch` in the given order, each padded to its longest.
double PaddingFactor(const std::vector<int>& lengths, int batch) {
  double real = 0, padded = 0;
  for (size_t b = 0; b < lengths.size(); b += batch) {
    const size_t end = std::min(lengths.size(), b + batch);
    int longest = 0;
    for (size_t i = b; i < end; ++i) {
      real += lengths[i];
      longest = std::max(longest, lengths[i]);
    }
    padded += static_cast<double>(longest) * (end - b);
  }
  return real > 0 ? padded / real : 1;
}

// (a): every mask (nullptr = baseline) over every batch, start to end.
absl::StatusOr<std::vector<int>> NaiveSweep(
    const Model& model, const std::vector<SweepExample>& examples,
    const std::vector<const HeadMask*>& masks, int batch) {
  std::vector<int> correct(masks.size(), 0);
  for (size_t m = 0; m < masks.size(); ++m) {
    for (size_t b = 0; b < examples.size(); b += batch) {
      const size_t end = std::min(examples.size(), b + batch);
      std::vector<const Encoding*> encodings;
      for (size_t i = b; i < end; ++i) {
        encodings.push_back(&examples[i].encoding);
      }
      auto input = model.engine().MakeBatch(encodings);
      if (!input.ok()) return input.status();
      EngineOptions options;
      options.cls_only_last_layer = false;  // HF runs every row of it
      auto out = model.engine().Run(
          *input, std::vector<const HeadMask*>(encodings.size(), masks[m]),
          options);
      if (!out.ok()) return out.status();
      for (size_t i = b; i < end; ++i) {
        correct[m] += Argmax(out->logits, i - b) == examples[i].label;
      }
    }
  }
  return correct;
}

absl::StatusOr<json> SweepBench(const Model& model) {
  auto examples = LoadExamples(model, absl::GetFlag(FLAGS_data),
                               absl::GetFlag(FLAGS_examples));
  if (!examples.ok()) return examples.status();
  const BertConfig& c = model.config();
  std::vector<SweepMask> all = SingleHeadMasks(
      c.num_hidden_layers, c.num_attention_heads, AblationMode::kZero);
  const int want = absl::GetFlag(FLAGS_masks);
  std::vector<SweepMask> masks;
  const size_t stride = want > 0 ? std::max<size_t>(1, all.size() / want) : 1;
  for (size_t i = 0; i < all.size() && (want <= 0 || masks.size() < want);
       i += stride) {
    masks.push_back(all[i]);
  }
  std::vector<const HeadMask*> naive_masks = {nullptr};
  for (const SweepMask& m : masks) naive_masks.push_back(&m.mask);
  const int batch = absl::GetFlag(FLAGS_batch);
  int64_t tokens = 0;
  for (const SweepExample& e : *examples) tokens += e.encoding.tokens.size();

  // Warm-up: one naive batch (allocator, OpenMP/BLAS pools).
  std::vector<SweepExample> head(
      examples->begin(),
      examples->begin() + std::min<size_t>(batch, examples->size()));
  if (auto s = NaiveSweep(model, head, {nullptr}, batch); !s.ok()) {
    return s.status();
  }
  const bool run_naive = absl::GetFlag(FLAGS_naive);
  double t0 = Now();
  absl::StatusOr<std::vector<int>> naive =
      std::vector<int>(naive_masks.size(), 0);
  if (run_naive) naive = NaiveSweep(model, *examples, naive_masks, batch);
  if (!naive.ok()) return naive.status();
  const double naive_s = Now() - t0;

  std::vector<int> engine(naive_masks.size(), 0);
  SweepCallbacks callbacks;
  callbacks.on_baseline = [&](const MaskResult& r) { engine[0] = r.correct; };
  callbacks.on_result = [&](const MaskResult& r) {
    engine[r.mask_index + 1] = r.correct;
  };
  const int workers = absl::GetFlag(FLAGS_workers) > 0
                          ? absl::GetFlag(FLAGS_workers)
                          : AutoSweepWorkers(model);
  auto run_engine = [&](int rows, int run_workers, bool pack = true,
                        bool reuse = true) -> absl::StatusOr<double> {
    SweepOptions options;
    options.max_batch_rows = rows;
    options.workers = run_workers;
    options.pack_tokens = pack;
    options.reuse_head_outputs = reuse;
    SweepExecutor executor(&model, options);
    const double start = Now();
    if (absl::Status s = executor.Run(*examples, masks, callbacks); !s.ok()) {
      return s;
    }
    return Now() - start;
  };
  auto engine_s = run_engine(batch, workers);
  if (!engine_s.ok()) return engine_s.status();
  int disagree = 0;
  for (size_t m = 0; m < engine.size(); ++m) {
    disagree += run_naive && engine[m] != (*naive)[m];
  }
  const double units = static_cast<double>(examples->size()) *
                       static_cast<double>(naive_masks.size());
  std::vector<int> lengths;
  for (const SweepExample& e : *examples) {
    lengths.push_back(static_cast<int>(e.encoding.tokens.size()));
  }
  const double naive_padding = PaddingFactor(lengths, batch);
  // The engine's masked passes: rows (example, mask) in length order, each
  // example once per mask of a start-layer group.
  std::sort(lengths.begin(), lengths.end());
  std::vector<int> rows_by_length;
  const size_t per_group =
      std::max<size_t>(1, masks.size() / c.num_hidden_layers);
  for (int length : lengths)
    rows_by_length.insert(rows_by_length.end(), per_group, length);
  // Layer passes of the single-head grid: L per mask naively; with prefix
  // reuse, L for the baseline and L - l for a mask first touching layer l,
  // whose last layer runs for [CLS] only: keys and values for all T rows
  // (2 d^2 T multiply-adds) plus one row's worth of the rest, against
  // T (4 d^2 + 2 d i) + 2 T^2 d for the full layer.
  const double d = c.hidden_size, inter = c.intermediate_size;
  double mean_t = 0;
  for (int length : lengths) mean_t += length;
  mean_t /= std::max<size_t>(1, lengths.size());
  const double full_layer =
      mean_t * (4 * d * d + 2 * d * inter) + 2 * mean_t * mean_t * d;
  const double cls_layer =
      2 * d * d * mean_t + (2 * d * d + 2 * d * inter) + 2 * mean_t * d;
  const double last_share = cls_layer / full_layer;
  double naive_layers = 0, engine_layers = c.num_hidden_layers;
  for (const SweepMask& m : masks) {
    naive_layers += c.num_hidden_layers;
    engine_layers +=
        c.num_hidden_layers - m.mask.FirstAffectedLayer() - 1 + last_share;
  }
  naive_layers += c.num_hidden_layers;
  // The engine's arithmetic in its default configuration (packed, so no
  // padding; head-output reuse skips each mask's start layer's queries,
  // keys and values: 3 d^2 T multiply-adds, 2 d^2 T + d^2 in a [CLS]-only
  // last layer): FLOPs per second of the sweep, to set against sgemm's.
  double engine_layer_flops = engine_layers;
  for (const SweepMask& m : masks) {
    const bool last = m.mask.FirstAffectedLayer() == c.num_hidden_layers - 1;
    engine_layer_flops -=
        (last ? 2 * d * d * mean_t + d * d : 3 * d * d * mean_t) / full_layer;
  }
  const double engine_flops = 2 * full_layer * engine_layer_flops *
                              static_cast<double>(examples->size());
  json extra = json::object();
  if (const int rows = absl::GetFlag(FLAGS_engine_batch); rows > 0) {
    auto wide_s = run_engine(rows, workers);
    if (!wide_s.ok()) return wide_s.status();
    extra["engine_batch"] = rows;
    extra["engine_wide_rate"] = units / *wide_s;
  }
  // The levers' shares: the engine without each (same workers).
  if (absl::GetFlag(FLAGS_lever_shares)) {
    auto unpacked_s = run_engine(batch, workers, /*pack=*/false);
    if (!unpacked_s.ok()) return unpacked_s.status();
    extra["engine_unpacked_rate"] = units / *unpacked_s;
    auto no_reuse_s = run_engine(batch, workers, true, /*reuse=*/false);
    if (!no_reuse_s.ok()) return no_reuse_s.status();
    extra["engine_no_head_reuse_rate"] = units / *no_reuse_s;
  }
  // The parallel workers' share: the same engine on one worker thread (the
  // process's thread settings), in the same run.
  if (workers != 1 && absl::GetFlag(FLAGS_worker_share)) {
    auto one_s = run_engine(batch, 1);
    if (!one_s.ok()) return one_s.status();
    extra["engine_one_worker_rate"] = units / *one_s;
  }
  json result{{"examples", examples->size()},
              {"mean_tokens", static_cast<double>(tokens) / examples->size()},
              {"masks", masks.size()},
              {"masks_of", all.size()},
              {"batch", batch},
              {"engine_s", *engine_s},
              {"engine_rate", units / *engine_s},
              {"engine_workers", workers},
              {"prefix_reuse_bound", naive_layers / engine_layers},
              // Multiply-adds counted as 2 FLOPs, padding excluded.
              {"engine_gflop", engine_flops / 1e9},
              {"engine_gflops", engine_flops / *engine_s / 1e9},
              // What one (mask, example) pair costs a loop that runs every
              // layer on batches padded as the naive loop's (and the
              // PyTorch loop's: 32 in file order).
              {"loop_gflop_per_pair",
               2 * full_layer * c.num_hidden_layers * naive_padding / 1e9},
              {"naive_padding", naive_padding},
              {"engine_padding", PaddingFactor(rows_by_length, batch)},
              {"baseline_correct", engine[0]},
              // Per mask (baseline first), for bench/report.py's check of
              // the PyTorch loop (bench/pytorch_loop.py) against the engine.
              {"correct", engine},
              {"masks_disagreeing", disagree}};
  if (run_naive) {
    result["naive_s"] = naive_s;
    result["naive_rate"] = units / naive_s;
    result["ratio"] = naive_s / *engine_s;
  }
  result.update(extra);
  return result;
}

// The six matrix products of one layer (q, k, v, attention output, FFN in,
// FFN out) as Linear computes them: x [N, in] times w [out, in] transposed.
// On `device` in `dtype`; a CUDA run waits for the device before the clock
// stops.
double SgemmSeconds(int64_t n, int64_t d, int64_t inter, int reps,
                    const torch::Device& device, torch::ScalarType dtype) {
  const auto on = torch::TensorOptions().device(device).dtype(dtype);
  torch::Tensor x = torch::randn({n, d}, on);
  torch::Tensor h = torch::randn({n, inter}, on);
  torch::Tensor wd = torch::randn({d, d}, on);
  torch::Tensor wi = torch::randn({inter, d}, on);
  torch::Tensor wo = torch::randn({d, inter}, on);
  auto once = [&] {
    for (int i = 0; i < 4; ++i) torch::mm(x, wd.t());
    torch::mm(x, wi.t());
    torch::mm(h, wo.t());
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  once();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    once();
    times.push_back(Now() - t0);
  }
  return Percentile(times, 0.5);
}

absl::StatusOr<json> EncoderBench(const Model& model) {
  const BertConfig& c = model.config();
  const int64_t b = absl::GetFlag(FLAGS_eff_batch);
  const int64_t t = std::min<int64_t>(absl::GetFlag(FLAGS_eff_tokens),
                                      c.max_position_embeddings);
  const int reps = absl::GetFlag(FLAGS_eff_reps);
  const int64_t d = c.hidden_size, inter = c.intermediate_size;
  ModelInput input;
  torch::manual_seed(0);
  const torch::Device device(model.device());
  input.input_ids =
      torch::randint(1, c.vocab_size, {b, t}, torch::kLong).to(device);
  input.token_type_ids = torch::zeros({b, t}, torch::kLong).to(device);
  input.attention_mask = torch::ones({b, t}, torch::kLong).to(device);
  EngineOptions options;
  // The FLOP count below is every layer over every row.
  options.cls_only_last_layer = false;
  for (int i = 0; i < 2; ++i) {
    if (auto out = model.engine().Run(input, {}, options); !out.ok()) {
      return out.status();
    }
  }
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    if (auto out = model.engine().Run(input, {}, options); !out.ok()) {
      return out.status();
    }
    times.push_back(Now() - t0);
  }
  const double forward_s = Percentile(times, 0.5);
  const double rows = static_cast<double>(b * t);
  const double gemm_flops = 2 * rows * (4.0 * d * d + 2.0 * d * inter);
  const double attention_flops = 4 * rows * static_cast<double>(t) * d;
  const double flops = c.num_hidden_layers * (gemm_flops + attention_flops);
  const torch::ScalarType dtype = model.dtype() == "F32"    ? torch::kFloat
                                  : model.dtype() == "BF16" ? torch::kBFloat16
                                                            : torch::kHalf;
  const double sgemm_s = SgemmSeconds(b * t, d, inter, reps, device, dtype);
  const double sgemm_rate = gemm_flops / sgemm_s;
  return json{
      {"batch", b},
      {"tokens", t},
      {"forward_s", forward_s},
      {"gflops", flops / forward_s / 1e9},
      {"sgemm_gflops", sgemm_rate / 1e9},
      {"fraction", flops / forward_s / sgemm_rate},
      {"gemm_share_of_flops", c.num_hidden_layers * gemm_flops / flops},
      {"gemm_share_of_time", c.num_hidden_layers * sgemm_s / forward_s}};
}

int Main() {
  if (absl::GetFlag(FLAGS_print_openblas_core)) {
    std::cout << OpenBlasCoreName() << "\n";
    return 0;
  }
  ConfigureThreads(absl::GetFlag(FLAGS_threads),
                   absl::GetFlag(FLAGS_openblas_threads));
  if (const std::string out = absl::GetFlag(FLAGS_make_random_model);
      !out.empty()) {
    absl::Status s = WriteRandomBert(absl::GetFlag(FLAGS_model), out, {});
    if (!s.ok()) std::cerr << s << "\n";
    return s.ok() ? 0 : 1;
  }
  ModelOptions options;
  options.dir = absl::GetFlag(FLAGS_model);
  options.dtype = absl::GetFlag(FLAGS_dtype);
  options.device = absl::GetFlag(FLAGS_device);
  options.attention = absl::GetFlag(FLAGS_attention);
  // At most the model's own limit (the tiny test fixtures have 64).
  auto file_config = BertConfig::FromFile(options.dir + "/config.json");
  if (!file_config.ok()) {
    std::cerr << file_config.status() << "\n";
    return 1;
  }
  options.max_seq_len = std::min(absl::GetFlag(FLAGS_max_seq_len),
                                 file_config->max_position_embeddings);
  auto model = Model::Load(options);
  if (!model.ok()) {
    std::cerr << model.status() << "\n";
    return 1;
  }
  const BertConfig& c = (*model)->config();
  json result = {
      {"model", absl::GetFlag(FLAGS_name).empty() ? options.dir
                                                  : absl::GetFlag(FLAGS_name)},
      {"dir", options.dir},
      {"dtype", (*model)->dtype()},
      {"device", (*model)->device()},
      {"attention", (*model)->attention()},
      {"layers", c.num_hidden_layers},
      {"heads", c.num_attention_heads},
      {"hidden", c.hidden_size},
      {"intermediate", c.intermediate_size},
      {"torch_threads", at::get_num_threads()},
      {"openblas_core", OpenBlasCoreName()},
      {"openblas_threads", ConfigureThreads(0, 0).blas}};
  if (absl::GetFlag(FLAGS_sweep)) {
    auto sweep = SweepBench(**model);
    if (!sweep.ok()) {
      std::cerr << sweep.status() << "\n";
      return 1;
    }
    result["sweep"] = *sweep;
  }
  auto encoder = EncoderBench(**model);
  if (!encoder.ok()) {
    std::cerr << encoder.status() << "\n";
    return 1;
  }
  result["encoder"] = *encoder;
  EmitResult(result, absl::GetFlag(FLAGS_json_out));
  return 0;
}

}  // namespace
}  // namespace bertology::bench

int main(int argc, char** argv) {
  // Before anything else: it may exec this program again (blas_core.h).
  bertology::ReexecWithFixedOpenBlasCore(argv);
  absl::ParseCommandLine(argc, argv);
  return bertology::bench::Main();
}
