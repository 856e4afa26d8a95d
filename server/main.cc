// bertology-server: flags -> Server::Start; SIGTERM/SIGINT -> drain.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/process/blas_core.h"
#include "server/service/rpc/server.h"

ABSL_FLAG(std::vector<std::string>, model, {},
          "NAME=DIR of an HF BERT model directory to serve; repeatable (or "
          "comma-separated). The first is the default model.");
ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "HOST:PORT for gRPC (port 0 picks a free port).");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9090",
          "HOST:PORT for Prometheus /metrics over HTTP; empty disables.");
ABSL_FLAG(int, threads, 1,
          "libtorch intra-op and inter-op threads (element-wise ops; 0 keeps "
          "libtorch's default). Float32 matrix products run on OpenBLAS's own "
          "pool instead (--blas_threads); with both pools wide their threads "
          "spin against each other (bench/RESULTS.md).");
ABSL_FLAG(int, blas_threads, 0,
          "OpenBLAS's thread pool, which runs libtorch's float32 matrix "
          "products; 0 keeps OpenBLAS's default (all cores). Measured best "
          "on CPU with --threads=1 (bench/RESULTS.md).");
ABSL_FLAG(int, max_batch_size, 32,
          "Rows per batched forward pass (Classify and sweeps); 1 disables "
          "dynamic batching.");
ABSL_FLAG(int, max_queue_delay_us, 2000,
          "Longest a queued Classify row waits for a batch to fill, in "
          "microseconds.");
ABSL_FLAG(int, max_queued_rows, 4096,
          "Classify rows queued per model before RESOURCE_EXHAUSTED; also, "
          "separately, the batch rows (min(--sweep_workers x "
          "(--max_batch_size or the sweep's max_batch_rows), its pairs)) of "
          "the sweeps running on a model on CPU: a sweep that does not fit "
          "is refused at once with RESOURCE_EXHAUSTED (on a GPU, "
          "--max_sweeps_per_device admits sweeps).");
ABSL_FLAG(int, malloc_arenas, 2,
          "glibc malloc arenas (M_ARENA_MAX). glibc's default, up to 8 per "
          "core, lets every gRPC handler thread keep the memory it freed in "
          "an arena of its own, so resident memory grows for minutes under "
          "mixed load (tests/load/load_fault_test.cc, Soak); 0 keeps glibc's "
          "default (or MALLOC_ARENA_MAX).");
ABSL_FLAG(int, batch_workers, 1,
          "Concurrent batched forward passes per model.");
ABSL_FLAG(int, max_reference_sets, 16,
          "Reference statistics sets (ComputeHeadStatistics, a sweep's "
          "reference) each model holds for mean and resample ablation; the "
          "oldest is dropped beyond");
ABSL_FLAG(int, sweep_workers, 0,
          "Threads each SweepAblation runs its forward passes on, each with "
          "one libtorch and one OpenBLAS thread (OpenBLAS stays at one "
          "thread while such a sweep runs). Results do not depend on it. "
          "0: one per usable core on CPU (affinity mask, cgroup CPU quota; "
          "measured on CPU in bench/RESULTS.md), 1 on a GPU (one stream of "
          "batches sized from free memory; not measured on a GPU yet). "
          "On CPU a sweep counts workers x its batch rows against "
          "--max_queued_rows; on a GPU, one against --max_sweeps_per_device.");
ABSL_FLAG(int, max_seq_len, 0,
          "Tokens per input, special tokens included; longer inputs are "
          "truncated longest-first. 0: the model's max_position_embeddings.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda[:N].");
ABSL_FLAG(std::string, dtype, "auto",
          "Compute dtype: auto (F32 on CPU; on CUDA BF16 where the card has "
          "compute capability 8.0 or later, else the checkpoint's), F32, "
          "BF16 or F16 (CUDA only). BF16 on CPU is opt-in: about 2x a F32 "
          "sweep of BERT-base where the CPU has AVX-512 BF16/AMX, far slower "
          "where it has not, and it moves some results "
          "(bench/RESULTS.md).");
ABSL_FLAG(std::string, attention, "auto",
          "Attention where no probabilities are returned: auto (fused under "
          "libtorch >= 2.0, CPU and CUDA; explicit under 1.x), explicit, or "
          "fused (libtorch's scaled_dot_product_attention with the head "
          "mask on each head's output; libtorch >= 2.0).");
ABSL_FLAG(bool, tf32, true,
          "On CUDA, F32 matrix products in TF32 (Ampere and later; about "
          "1e-3 relative per product). --notf32 keeps full F32.");
ABSL_FLAG(int, max_sweeps_per_device, 2,
          "On CUDA, SweepAblation calls running at once per device; one "
          "more is refused with RESOURCE_EXHAUSTED. Each sizes its batches "
          "from the device's free memory divided by this.");
ABSL_FLAG(int, grace_period_s, 30,
          "On SIGTERM, how long in-flight calls may take to finish.");
ABSL_FLAG(int, max_connection_age_s, 0,
          "Close client connections after this age so clients behind DNS "
          "see new replicas; 0: never.");
ABSL_FLAG(int, max_connection_age_grace_s, 0,
          "Once a connection has reached --max_connection_age_s, how long its "
          "calls may still run before it is closed under them; 0: no limit "
          "(each call runs to its own deadline, so a sweep stream that makes "
          "progress is never cut). When set, keep it at least the longest "
          "shard deadline of the sweep jobs (bertology sweep "
          "--shard-timeout).");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate chain (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key (with --tls_cert).");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: with it, bertology.v1 calls need a client "
          "certificate this CA signed (mutual TLS; needs --tls_cert). "
          "grpc.health.v1 stays open for probes.");
ABSL_FLAG(std::string, token_file, "",
          "File of bearer tokens, one 'TOKEN full|readonly' per line; with "
          "it, bertology.v1 calls need 'authorization: Bearer TOKEN'. "
          "Re-read when it changes. A readonly token may call GetModelInfo, "
          "Tokenize, Classify and GetAttention.");
ABSL_FLAG(int, max_inputs_per_call, 256, "Most inputs in one Classify call.");
ABSL_FLAG(int, max_examples_per_sweep, 10000, "Most examples in one sweep.");
ABSL_FLAG(int, max_masks_per_sweep, 10000,
          "Most masks in one sweep, after expanding the generators.");
ABSL_FLAG(int, max_text_bytes, 65536, "Longest text_a/text_b, in bytes.");
ABSL_FLAG(int, max_message_bytes, 64 << 20, "Largest gRPC message, in bytes.");
ABSL_FLAG(int, sweep_cache_mb, 256,
          "Memory per sweep for cached unmasked hidden states, in MiB.");
ABSL_FLAG(int, warmup_passes, 3,
          "Full-size forward passes per model before health turns SERVING.");

namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
}

// absl keeps only the last of repeated flags; gather every --model into one
// comma-separated --model so `--model=a=X --model=b=Y` serves both.
std::vector<char*> MergeModelFlags(int argc, char** argv, std::string* merged) {
  std::vector<std::string> values;
  std::vector<char*> out;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--model=")) {
      values.push_back(arg.substr(8));
    } else if ((arg == "--model" || arg == "-model") && i + 1 < argc) {
      values.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "-model=")) {
      values.push_back(arg.substr(7));
    } else {
      out.push_back(argv[i]);
    }
  }
  if (!values.empty()) {
    *merged = absl::StrCat("--model=", absl::StrJoin(values, ","));
    out.insert(out.begin() + 1, merged->data());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: it may exec this program again (blas_core.h).
  bertology::ReexecWithFixedOpenBlasCore(argv);
  // absl's --help lists only flags of files named like the program; ours
  // live in server/main.cc, so say so (--helpfull still lists every flag).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "server/main.cc");
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::SetProgramUsageMessage(
      "Serves HF BERT classifiers over gRPC with request-scoped head masks.\n"
      "  bertology-server --model=NAME=DIR [--model=NAME=DIR ...] "
      "[--listen=HOST:PORT] ...");
  std::string merged;
  std::vector<char*> args = MergeModelFlags(argc, argv, &merged);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  if (const int arenas = absl::GetFlag(FLAGS_malloc_arenas); arenas > 0) {
    mallopt(M_ARENA_MAX, arenas);
  }

  bertology::ServerOptions options;
  for (const std::string& spec : absl::GetFlag(FLAGS_model)) {
    std::vector<std::string> parts =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      std::fprintf(stderr, "bertology-server: --model=%s is not NAME=DIR\n",
                   spec.c_str());
      return 2;
    }
    options.models.push_back({parts[0], parts[1]});
  }
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.blas_threads = absl::GetFlag(FLAGS_blas_threads);
  options.device = absl::GetFlag(FLAGS_device);
  options.dtype = absl::GetFlag(FLAGS_dtype);
  options.attention = absl::GetFlag(FLAGS_attention);
  options.tf32 = absl::GetFlag(FLAGS_tf32);
  options.max_sweeps_per_device = absl::GetFlag(FLAGS_max_sweeps_per_device);
  options.max_seq_len = absl::GetFlag(FLAGS_max_seq_len);
  options.max_queue_delay =
      absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  options.max_queued_rows = absl::GetFlag(FLAGS_max_queued_rows);
  options.batch_workers = absl::GetFlag(FLAGS_batch_workers);
  options.sweep_workers = absl::GetFlag(FLAGS_sweep_workers);
  options.max_reference_sets = absl::GetFlag(FLAGS_max_reference_sets);
  options.warmup_passes = absl::GetFlag(FLAGS_warmup_passes);
  options.max_connection_age =
      absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_s));
  options.max_connection_age_grace =
      absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_grace_s));
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.token_file = absl::GetFlag(FLAGS_token_file);
  if (!options.token_file.empty() && options.tls_cert_file.empty()) {
    std::fprintf(stderr,
                 "bertology-server: warning: --token_file without --tls_cert: "
                 "tokens travel in plain text (fine on loopback or behind a "
                 "TLS-terminating proxy, not on an open network)\n");
  }
  bertology::ServiceLimits& limits = options.limits;
  limits.max_batch_size = absl::GetFlag(FLAGS_max_batch_size);
  limits.max_inputs_per_call = absl::GetFlag(FLAGS_max_inputs_per_call);
  limits.max_examples_per_sweep = absl::GetFlag(FLAGS_max_examples_per_sweep);
  limits.max_masks_per_sweep = absl::GetFlag(FLAGS_max_masks_per_sweep);
  limits.max_text_bytes = absl::GetFlag(FLAGS_max_text_bytes);
  limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  limits.sweep_cache_bytes = int64_t{absl::GetFlag(FLAGS_sweep_cache_mb)} << 20;
  const absl::Duration grace =
      absl::Seconds(absl::GetFlag(FLAGS_grace_period_s));
  options.on_listening = [](int port, int metrics_port) {
    std::fprintf(stderr,
                 "bertology-server: listening on port %d, metrics on port %d; "
                 "loading models\n",
                 port, metrics_port);
  };

  // SIGTERM/SIGINT are turned into a byte on a pipe (all a handler may
  // safely do) and a thread drains the server. Blocking the signals and
  // sigwait() is not enough: libraries start threads before main().
  if (pipe(g_signal_pipe) != 0) {
    std::perror("bertology-server: pipe");
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  absl::Mutex mu;
  bertology::Server* running = nullptr;  // guarded by mu
  std::thread signal_thread([&] {
    unsigned char signal = 0;
    while (read(g_signal_pipe[0], &signal, 1) < 0 && errno == EINTR) {
    }
    std::fprintf(stderr, "bertology-server: signal %d, draining for up to %s\n",
                 signal, absl::FormatDuration(grace).c_str());
    absl::MutexLock lock(&mu);
    if (running == nullptr) {
      std::fprintf(stderr, "bertology-server: stopped while loading\n");
      std::_Exit(128 + signal);
    }
    running->Shutdown(grace);
  });

  auto server = bertology::Server::Start(std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "bertology-server: %s\n",
                 std::string(server.status().message()).c_str());
    std::_Exit(1);
  }
  {
    absl::MutexLock lock(&mu);
    running = server->get();
  }
  std::fprintf(stderr, "bertology-server: serving on port %d\n",
               (*server)->port());
  (*server)->Wait();
  signal_thread.join();
  server->reset();
  std::fprintf(stderr, "bertology-server: stopped\n");
  return 0;
}
