// bertology-server's lifecycle: flags, start-up failures, health while
// loading and after, and the SIGTERM drain.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/core/model/bert_layer.h"
#include "server/core/process/blas_core.h"
#include "tests/integration/server_process.h"

namespace bertology {
namespace {

using testing::GoldenModelDir;
using testing::RunServerToExit;
using testing::ServerProcess;

constexpr int kServing = 1, kNotServing = 2;

TEST(LifecycleTest, HelpListsEveryFlag) {
  testing::RunResult r = RunServerToExit({"--helpfull"});
  for (const char* flag : {"--model",
                           "--listen",
                           "--metrics_listen",
                           "--threads",
                           "--max_batch_size",
                           "--max_queue_delay_us",
                           "--max_seq_len",
                           "--device",
                           "--dtype",
                           "--attention",
                           "--tf32",
                           "--max_sweeps_per_device",
                           "--grace_period_s",
                           "--max_connection_age_s",
                           "--tls_cert",
                           "--tls_key",
                           "--max_inputs_per_call",
                           "--max_masks_per_sweep",
                           "--max_text_bytes",
                           "--max_message_bytes",
                           "--sweep_cache_mb"}) {
    EXPECT_NE(r.output.find(absl::StrCat(flag, " ")), std::string::npos)
        << flag << "\n"
        << r.output;
  }
}

TEST(LifecycleTest, BadCheckpointExitsNonZeroWithTheReason) {
  testing::RunResult r =
      RunServerToExit({"--listen=127.0.0.1:0",
                       "--metrics_listen=", "--model=bad=/nonexistent/dir"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("/nonexistent/dir"), std::string::npos) << r.output;
}

// Another family's checkpoint (here the golden BERT's files with a
// DeBERTa model_type) is refused at start-up naming the field, not loaded
// as BERT or failed on a weight key.
TEST(LifecycleTest, UnsupportedModelTypeIsRefusedNamingIt) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("bertology_deberta_", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& entry :
       std::filesystem::directory_iterator(GoldenModelDir())) {
    std::filesystem::copy(entry.path(), dir / entry.path().filename());
  }
  std::ifstream in(dir / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
  const size_t at = config.find("\"model_type\": \"bert\"");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, std::string("\"model_type\": \"bert\"").size(),
                 "\"model_type\": \"deberta-v2\"");
  std::ofstream(dir / "config.json") << config;
  testing::RunResult r =
      RunServerToExit({"--listen=127.0.0.1:0",
                       "--metrics_listen=", "--model=deberta=" + dir.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("model_type=\"deberta-v2\" is not supported"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find((dir / "config.json").string()), std::string::npos)
      << r.output;
  std::filesystem::remove_all(dir);
}

TEST(LifecycleTest, NoModelExitsNonZero) {
  testing::RunResult r =
      RunServerToExit({"--listen=127.0.0.1:0", "--metrics_listen="});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--model"), std::string::npos) << r.output;
}

TEST(LifecycleTest, CudaWithoutCudaIsAClearError) {
  testing::RunResult r = RunServerToExit({"--listen=127.0.0.1:0",
                                          "--metrics_listen=", "--device=cuda",
                                          "--model=tiny=" + GoldenModelDir()});
  if (r.exit_code == 0 || r.output.find("serving on") != std::string::npos) {
    GTEST_SKIP() << "this machine has CUDA";
  }
  EXPECT_NE(r.output.find("CUDA"), std::string::npos) << r.output;
}

// The real binary's start: where this machine's OpenBLAS fell back to its
// SSE3 kernels the server execs itself once with the fixed core (one line
// saying so, no loop); elsewhere it says nothing of it (blas_core.h).
TEST(LifecycleTest, ServerFixesOpenBlasKernelsOnce) {
  const bool forced = std::getenv("OPENBLAS_CORETYPE") != nullptr ||
                      std::getenv("BERTOLOGY_NO_BLAS_FIX") != nullptr;
  const std::string fix =
      forced ? "" : OpenBlasCoreFix(OpenBlasCoreName(), DetectCpuVector());
  // absl's --helpfull exits 1 after printing; what matters is the start.
  testing::RunResult r = RunServerToExit({"--helpfull"});
  EXPECT_NE(r.output.find("--model"), std::string::npos) << r.output;
  const std::string said = "running again with OPENBLAS_CORETYPE=";
  const size_t at = r.output.find(said);
  if (fix.empty()) {
    EXPECT_EQ(at, std::string::npos) << r.output;
    return;
  }
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(at + said.size(), fix.size()), fix);
  EXPECT_EQ(r.output.find(said, at + 1), std::string::npos) << r.output;
}

TEST(LifecycleTest, UnknownDtypeExitsNaming) {
  testing::RunResult r = RunServerToExit({"--listen=127.0.0.1:0",
                                          "--metrics_listen=", "--dtype=F64",
                                          "--model=tiny=" + GoldenModelDir()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--dtype=F64"), std::string::npos) << r.output;
}

// --attention through the real binary: an unknown kernel stops the start
// naming the flag; `fused` serves (and says so) where libtorch has it, and
// stops naming the libtorch it needs where it has not (Debian 12's 1.13).
TEST(LifecycleTest, AttentionFlagServesOrExitsNaming) {
  testing::RunResult bad = RunServerToExit(
      {"--listen=127.0.0.1:0", "--metrics_listen=", "--attention=flash",
       "--model=tiny=" + GoldenModelDir()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--attention=flash"), std::string::npos)
      << bad.output;
  if (!FusedAttentionAvailable()) {
    testing::RunResult r = RunServerToExit(
        {"--listen=127.0.0.1:0", "--metrics_listen=", "--attention=fused",
         "--model=tiny=" + GoldenModelDir()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("libtorch >= 2.0"), std::string::npos) << r.output;
    return;
  }
  auto server = ServerProcess::Start({"--model=tiny=" + GoldenModelDir(),
                                      "--attention=fused", "--threads=1",
                                      "--warmup_passes=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->WaitServing().ok()) << (*server)->Log();
  EXPECT_NE((*server)->Log().find("fused attention"), std::string::npos)
      << (*server)->Log();
}

// --dtype=BF16 (the opt-in CPU path): the server says so, its logits are
// F32's to BF16's resolution but not F32's to the bit, and a sweep (packed,
// from cached head outputs, on parallel workers) scores every mask with
// mean losses close to F32's.
TEST(LifecycleTest, Bf16ServesCloseToF32) {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<double>> losses;  // baseline first, per mask
  for (const std::string dtype : {"F32", "BF16"}) {
    auto server =
        ServerProcess::Start({"--model=tiny=" + GoldenModelDir(),
                              "--dtype=" + dtype, "--warmup_passes=1"});
    ASSERT_TRUE(server.ok()) << server.status();
    ASSERT_TRUE((*server)->WaitServing().ok());
    auto stub = (*server)->NewStub();
    {
      grpc::ClientContext context;
      v1::GetModelInfoResponse info;
      ASSERT_TRUE(stub->GetModelInfo(&context, {}, &info).ok());
      EXPECT_EQ(info.models(0).dtype(), dtype);
    }
    v1::ClassifyRequest request;
    for (const char* text : {"the cat sat on the mat", "a dog", "hello"}) {
      request.add_inputs()->set_text_a(text);
    }
    v1::ClassifyResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Classify(&context, request, &response).ok());
    logits.emplace_back();
    for (const auto& p : response.predictions()) {
      logits.back().insert(logits.back().end(), p.logits().begin(),
                           p.logits().end());
    }
    v1::SweepAblationRequest sweep;
    for (int i = 0; i < 12; ++i) {
      auto* e = sweep.add_examples();
      e->mutable_input()->set_text_a(
          absl::StrCat("the cat sat on the mat ", i, i % 3 ? " again" : ""));
      e->set_label(i % 3);
    }
    sweep.add_masks()->mutable_all_single_heads();
    grpc::ClientContext sweep_context;
    auto reader = stub->SweepAblation(&sweep_context, sweep);
    v1::SweepAblationResponse event;
    losses.emplace_back();
    while (reader->Read(&event)) {
      const v1::MaskResult* r = event.has_baseline() ? &event.baseline()
                                : event.has_result() ? &event.result()
                                                     : nullptr;
      if (r != nullptr) losses.back().push_back(r->loss_sum() / r->examples());
    }
    ASSERT_TRUE(reader->Finish().ok()) << dtype;
  }
  ASSERT_EQ(losses[0].size(), losses[1].size());
  ASSERT_GT(losses[0].size(), 1u);
  // What a sweep reports is each mask's effect (its mean loss minus the
  // baseline's). BF16's rounding, and how much of it there is, depends on
  // the CPU's BF16 path (AVX-512 BF16/AMX, or emulated): mean losses within
  // 0.024 of F32's against a largest effect of 0.61 on an Intel Xeon with
  // AMX, 0.065 (effects within 0.070) on an AMD EPYC without AVX-512. What
  // must hold on any CPU: the effects rank the heads as F32's do
  // (correlation), and no loss is off by a fifth of the largest effect. A
  // BF16 sweep that ignored its masks (no effects) or scored garbage fails.
  double max_loss_diff = 0, max_effect = 0;
  std::vector<double> f32, bf16;
  for (size_t m = 1; m < losses[0].size(); ++m) {
    f32.push_back(losses[0][m] - losses[0][0]);
    bf16.push_back(losses[1][m] - losses[1][0]);
    max_effect = std::max(max_effect, std::abs(f32.back()));
  }
  for (size_t m = 0; m < losses[0].size(); ++m) {
    max_loss_diff =
        std::max(max_loss_diff, std::abs(losses[0][m] - losses[1][m]));
  }
  const auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  const double mf = mean(f32), mb = mean(bf16);
  double sfb = 0, sff = 0, sbb = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    sfb += (f32[i] - mf) * (bf16[i] - mb);
    sff += (f32[i] - mf) * (f32[i] - mf);
    sbb += (bf16[i] - mb) * (bf16[i] - mb);
  }
  const double correlation = sfb / std::sqrt(sff * sbb);
  std::cout << "BF16 sweep: largest |mean loss - F32's| " << max_loss_diff
            << ", largest F32 mask effect " << max_effect
            << ", correlation of the effects " << correlation << "\n";
  EXPECT_GT(max_effect, 0.0);
  EXPECT_GT(correlation, 0.9);
  EXPECT_LT(max_loss_diff, 0.2 * max_effect);
  ASSERT_EQ(logits[0].size(), logits[1].size());
  float max_abs = 0, max_diff = 0;
  for (size_t i = 0; i < logits[0].size(); ++i) {
    max_abs = std::max(max_abs, std::abs(logits[0][i]));
    max_diff = std::max(max_diff, std::abs(logits[0][i] - logits[1][i]));
  }
  EXPECT_GT(max_diff, 0.0f) << "BF16 gave F32's logits to the bit";
  // 8 significant bits through 2 layers: a few percent of the largest logit.
  EXPECT_LT(max_diff, 0.1f * std::max(1.0f, max_abs));
}

TEST(LifecycleTest, NotServingUntilLoadedAndWarm) {
  // Many warm-up passes keep the server loading for a while.
  auto server = ServerProcess::Start({"--model=tiny=" + GoldenModelDir(),
                                      "--warmup_passes=40", "--threads=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<int> health = (*server)->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, kNotServing);
  {
    auto stub = (*server)->NewStub();
    v1::ClassifyRequest request;
    request.add_inputs()->set_text_a("the cat");
    v1::ClassifyResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub->Classify(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << status.error_message();
  }
  ASSERT_TRUE((*server)->WaitServing(absl::Seconds(120)).ok());
  EXPECT_EQ(*(*server)->Health(), kServing);
  auto stub = (*server)->NewStub();
  v1::ClassifyRequest request;
  request.add_inputs()->set_text_a("the cat");
  v1::ClassifyResponse response;
  grpc::ClientContext context;
  EXPECT_TRUE(stub->Classify(&context, request, &response).ok());
}

v1::SweepAblationRequest LongSweep(int repeats) {
  v1::SweepAblationRequest request;
  for (int i = 0; i < 100; ++i) {
    auto* e = request.add_examples();
    e->mutable_input()->set_text_a(absl::StrCat("the cat sat on the mat ", i));
    e->set_label(i % 3);
  }
  auto* random = request.add_masks()->mutable_random();
  random->set_fraction(0.25);
  random->set_repeats(repeats);
  request.mutable_options()->set_max_batch_rows(4);
  return request;
}

struct SweepOutcome {
  grpc::Status status;
  int results = 0;
};

TEST(LifecycleTest, SigtermDrainsInFlightCalls) {
  auto server = ServerProcess::Start({"--model=tiny=" + GoldenModelDir(),
                                      "--grace_period_s=60",
                                      "--warmup_passes=1", "--threads=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->WaitServing().ok());

  // A health watcher sees the switch to NOT_SERVING.
  auto health = grpc::health::v1::Health::NewStub((*server)->channel());
  grpc::ClientContext watch_context;
  auto watch = health->Watch(&watch_context, {});
  grpc::health::v1::HealthCheckResponse seen;
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), kServing);

  // A sweep in flight when the signal comes.
  auto stub = (*server)->NewStub();
  grpc::ClientContext sweep_context;
  const v1::SweepAblationRequest request = LongSweep(60);
  auto reader = stub->SweepAblation(&sweep_context, request);
  v1::SweepAblationResponse event;
  ASSERT_TRUE(reader->Read(&event));  // the plan: the call is in flight
  const absl::Time signalled = absl::Now();
  (*server)->Signal(SIGTERM);

  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), kNotServing);
  watch_context.TryCancel();

  int results = 0;
  while (reader->Read(&event)) results += event.has_result() ? 1 : 0;
  grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(results, 60);

  absl::StatusOr<int> code = (*server)->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << (*server)->Log();
  EXPECT_EQ(*code, 0) << (*server)->Log();
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(60));
  // New calls are refused once it is down.
  auto late = v1::Bertology::NewStub(grpc::CreateChannel(
      (*server)->address(), grpc::InsecureChannelCredentials()));
  v1::GetModelInfoResponse info;
  grpc::ClientContext late_context;
  late_context.set_deadline(std::chrono::system_clock::now() +
                            std::chrono::seconds(2));
  EXPECT_FALSE(late->GetModelInfo(&late_context, {}, &info).ok());
}

TEST(LifecycleTest, SigtermGracePeriodBoundsTheDrain) {
  auto server = ServerProcess::Start(
      {"--model=tiny=" + GoldenModelDir(), "--grace_period_s=1",
       "--warmup_passes=1", "--threads=1", "--max_masks_per_sweep=100000"});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->WaitServing().ok());
  auto stub = (*server)->NewStub();
  grpc::ClientContext context;
  auto reader = stub->SweepAblation(&context, LongSweep(20000));
  v1::SweepAblationResponse event;
  ASSERT_TRUE(reader->Read(&event));
  const absl::Time signalled = absl::Now();
  (*server)->Signal(SIGTERM);
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_FALSE(status.ok());
  absl::StatusOr<int> code = (*server)->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << (*server)->Log();
  EXPECT_EQ(*code, 0) << (*server)->Log();
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(10));
}

}  // namespace
}  // namespace bertology
