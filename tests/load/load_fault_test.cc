// Load and fault tests of the real bertology-server on loopback, on the
// shipped model (models/querytitle-zh-tiny: 12 layers x 12 heads, inputs up
// to 64 tokens):
//  - Soak: mixed Classify, GetAttention and SweepAblation at a fixed
//    concurrency, with deliberate bad requests; no other error, p99 under a
//    bound, resident memory flat after warm-up;
//  - SigtermUnderLoad: every call ends OK (complete) or with a clean
//    UNAVAILABLE/CANCELLED; none hangs, none is lost;
//  - ClientDisconnectMidSweep: the work stops (metrics), the memory of the
//    sweep's cache is given back;
//  - OverloadedSweeps: sweeps over --max_queued_rows are refused at once.
// Short by default (make test); BERTOLOGY_SOAK_S=N lengthens the soak to N
// seconds and repeats the others (make soak).
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/lb/replica_fleet.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BERTOLOGY_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BERTOLOGY_TEST_UNDER_ASAN 1
#endif

namespace bertology {
namespace testing {
namespace {

#ifdef BERTOLOGY_TEST_UNDER_ASAN
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

using grpc::StatusCode;

constexpr int kLayers = 12;
constexpr int kHeads = 12;
constexpr int kLabels = 5;
constexpr int kMaxTextBytes = 4096;  // the servers' --max_text_bytes

double SoakSeconds() {
  const char* v = std::getenv("BERTOLOGY_SOAK_S");
  return v != nullptr && *v != '\0' ? std::max(30.0, std::atof(v)) : 30.0;
}
// Rounds of the other tests: 1 in the short form, more in the long one.
int Rounds(double seconds_per_round) {
  const char* v = std::getenv("BERTOLOGY_SOAK_S");
  if (v == nullptr || *v == '\0') return 1;
  return std::max(1, static_cast<int>(std::atof(v) / seconds_per_round));
}

std::string ModelDir() {
  const char* v = std::getenv("BERTOLOGY_SOURCE_DIR");
  return absl::StrCat(v != nullptr && *v != '\0' ? v : ".",
                      "/models/querytitle-zh-tiny");
}

// The UTF-8 characters of the model's test set, to cut texts of any length
// from (one character is one token of this vocabulary).
const std::vector<std::string>& Characters() {
  static const auto* chars = [] {
    auto* out = new std::vector<std::string>;
    std::ifstream in(ModelDir() + "/data/test.tsv");
    std::string line;
    while (std::getline(in, line) && out->size() < 20000) {
      for (size_t i = 0; i < line.size();) {
        const unsigned char c = line[i];
        const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (c > ' ' && !(c >= '0' && c <= '9'))
          out->push_back(line.substr(i, n));
        i += n;
      }
    }
    return out;
  }();
  return *chars;
}

std::string Text(std::mt19937* rng, int chars) {
  const auto& pool = Characters();
  std::uniform_int_distribution<size_t> start(0, pool.size() - chars - 1);
  std::string out;
  for (size_t i = start(*rng), end = i + chars; i < end; ++i) out += pool[i];
  return out;
}

// A pair of about `tokens` tokens in all (2..64 after truncation).
v1::TextInput Input(std::mt19937* rng, int tokens) {
  v1::TextInput in;
  const int a = std::max(1, tokens / 3);
  in.set_text_a(Text(rng, a));
  in.set_text_b(Text(rng, std::max(1, tokens - a)));
  return in;
}

int RandomLength(std::mt19937* rng) {
  return std::uniform_int_distribution<int>(2, 70)(*rng);
}

std::vector<v1::LabeledExample> LabeledExamples(std::mt19937* rng, int n,
                                                int tokens = 0) {
  std::vector<v1::LabeledExample> out(n);
  for (auto& e : out) {
    *e.mutable_input() = Input(rng, tokens > 0 ? tokens : RandomLength(rng));
    e.set_label(std::uniform_int_distribution<int>(0, kLabels - 1)(*rng));
  }
  return out;
}

v1::SweepAblationRequest SweepRequest(
    const std::vector<v1::LabeledExample>& examples, int random_masks,
    int seed) {
  v1::SweepAblationRequest request;
  for (const auto& e : examples) *request.add_examples() = e;
  auto* r = request.add_masks()->mutable_random();
  r->set_fraction(0.2);
  r->set_repeats(random_masks);
  r->set_seed(seed);
  return request;
}

void SetDeadline(grpc::ClientContext* context, absl::Duration d) {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(d));
}

// One call's outcome as the client saw it.
struct Outcome {
  StatusCode code = StatusCode::OK;
  std::string message;
  absl::Duration latency;
  bool complete = true;  // an OK answer holds everything asked for
};

// One unary call with `deadline`; `complete` is left to the caller.
template <typename Request, typename Response>
Outcome Unary(grpc::Status (v1::Bertology::Stub::*method)(grpc::ClientContext*,
                                                          const Request&,
                                                          Response*),
              v1::Bertology::Stub* stub, const Request& request,
              absl::Duration deadline, Response* response) {
  grpc::ClientContext context;
  SetDeadline(&context, deadline);
  const absl::Time start = absl::Now();
  grpc::Status s = (stub->*method)(&context, request, response);
  return Outcome{s.error_code(), s.error_message(), absl::Now() - start};
}

Outcome Classify(v1::Bertology::Stub* stub, const v1::ClassifyRequest& request,
                 absl::Duration deadline) {
  v1::ClassifyResponse response;
  Outcome o =
      Unary(&v1::Bertology::Stub::Classify, stub, request, deadline, &response);
  o.complete = response.predictions_size() == request.inputs_size();
  for (const auto& p : response.predictions()) {
    o.complete = o.complete && p.probabilities_size() == kLabels;
  }
  return o;
}

Outcome GetAttention(v1::Bertology::Stub* stub,
                     const v1::GetAttentionRequest& request,
                     absl::Duration deadline) {
  v1::GetAttentionResponse response;
  Outcome o = Unary(&v1::Bertology::Stub::GetAttention, stub, request, deadline,
                    &response);
  const size_t t = response.tokens_size();
  o.complete = t > 0 && response.maps_size() == request.layers_size() * kHeads;
  for (const auto& m : response.maps()) {
    o.complete = o.complete && m.data().size() == t * t * sizeof(float);
  }
  return o;
}

// Reads the whole stream; `complete`: the baseline and one result per
// planned mask arrived. `on_event` may cancel `context`.
Outcome Sweep(v1::Bertology::Stub* stub,
              const v1::SweepAblationRequest& request, absl::Duration deadline,
              grpc::ClientContext* context = nullptr,
              const std::function<void(const v1::SweepAblationResponse&)>&
                  on_event = {}) {
  grpc::ClientContext own;
  if (context == nullptr) context = &own;
  SetDeadline(context, deadline);
  const absl::Time start = absl::Now();
  auto reader = stub->SweepAblation(context, request);
  v1::SweepAblationResponse event;
  int planned = -1, results = 0, baselines = 0;
  while (reader->Read(&event)) {
    if (event.has_plan()) planned = event.plan().num_masks();
    if (event.has_result()) ++results;
    if (event.has_baseline()) ++baselines;
    if (on_event) on_event(event);
  }
  grpc::Status s = reader->Finish();
  Outcome o{s.error_code(), s.error_message(), absl::Now() - start};
  o.complete = planned >= 0 && results == planned && baselines == 1;
  return o;
}

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> extra) {
  std::vector<std::string> args = {
      absl::StrCat("--model=qt=", ModelDir()), "--threads=1",
      "--blas_threads=1", "--warmup_passes=1",
      absl::StrCat("--max_text_bytes=", kMaxTextBytes)};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = ServerProcess::Start(args);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  absl::Status serving = (*server)->WaitServing(absl::Seconds(120));
  EXPECT_TRUE(serving.ok()) << serving;
  return serving.ok() ? *std::move(server) : nullptr;
}

double Metric(
    const ServerProcess& server, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& labels = {}) {
  auto text = server.FetchMetrics();
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? MetricValue(*text, name, labels) : -1;
}

double RssMiB(const ServerProcess& server) {
  return Metric(server, "process_resident_memory_bytes") / (1 << 20);
}

double Percentile(std::vector<absl::Duration> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  return absl::ToDoubleMilliseconds(v[i]);
}

// ------------------------------------------------------------------ Soak

// The deliberate bad requests and the code each must get.
struct BadCall {
  const char* what;
  StatusCode expected;
  std::function<Outcome(v1::Bertology::Stub*, std::mt19937*)> call;
};

std::vector<BadCall> BadCalls() {
  const absl::Duration d = absl::Seconds(30);
  return {
      {"Classify on an unknown model", StatusCode::NOT_FOUND,
       [d](v1::Bertology::Stub* stub, std::mt19937* rng) {
         v1::ClassifyRequest r;
         r.set_model("no-such-model");
         *r.add_inputs() = Input(rng, 10);
         return Classify(stub, r, d);
       }},
      {"Classify over --max_inputs_per_call", StatusCode::RESOURCE_EXHAUSTED,
       [d](v1::Bertology::Stub* stub, std::mt19937* rng) {
         v1::ClassifyRequest r;
         for (int i = 0; i < 65; ++i) *r.add_inputs() = Input(rng, 8);
         return Classify(stub, r, d);
       }},
      {"Classify over --max_text_bytes", StatusCode::INVALID_ARGUMENT,
       [d](v1::Bertology::Stub* stub, std::mt19937*) {
         v1::ClassifyRequest r;
         r.add_inputs()->set_text_a(std::string(kMaxTextBytes + 1, 'a'));
         return Classify(stub, r, d);
       }},
      {"GetAttention of layer 99", StatusCode::INVALID_ARGUMENT,
       [d](v1::Bertology::Stub* stub, std::mt19937* rng) {
         v1::GetAttentionRequest r;
         *r.mutable_input() = Input(rng, 10);
         r.add_layers(99);
         return GetAttention(stub, r, d);
       }},
      {"SweepAblation without examples", StatusCode::INVALID_ARGUMENT,
       [d](v1::Bertology::Stub* stub, std::mt19937*) {
         return Sweep(stub, SweepRequest({}, 2, 1), d);
       }},
  };
}

struct SoakTally {
  std::mutex mu;
  std::map<std::string, std::vector<absl::Duration>> latency;  // OK calls
  int calls = 0, ok = 0, deliberate = 0, deliberate_right = 0;
  std::vector<std::string> unexpected;  // calls that failed or were short
  void Add(const std::string& method, const Outcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    if (o.code == StatusCode::OK && o.complete) {
      ++ok;
      latency[method].push_back(o.latency);
    } else if (unexpected.size() < 20) {
      unexpected.push_back(absl::StrCat(method, ": code ", o.code, " ",
                                        o.message,
                                        o.complete ? "" : " (short)"));
    } else {
      unexpected.push_back("...");
    }
  }
  void AddBad(const BadCall& bad, const Outcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    ++deliberate;
    if (o.code == bad.expected) {
      ++deliberate_right;
    } else if (unexpected.size() < 20) {
      unexpected.push_back(absl::StrCat(bad.what, ": code ", o.code,
                                        ", expected ", bad.expected, " ",
                                        o.message));
    }
  }
};

TEST(LoadFaultTest, Soak) {
  const double seconds = SoakSeconds();
  constexpr int kConcurrency = 4;
  auto server = StartServer({"--max_inputs_per_call=64"});
  ASSERT_NE(server, nullptr);
  const std::vector<BadCall> bad = BadCalls();
  SoakTally tally;
  const absl::Duration deadline = absl::Seconds(60);
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  // Warm-up: the first fifth (at least 10 s), with every other call of the
  // largest shapes so the allocator reaches its working set sooner.
  const double warm_s = std::max(10.0, seconds / 5);
  const absl::Time warm_end = start + absl::Seconds(warm_s);
  std::vector<std::thread> workers;
  for (int w = 0; w < kConcurrency; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(100 + w);
      auto stub = server->NewStub();
      for (int i = 0; absl::Now() < end; ++i) {
        const bool largest = i % 2 == 0 && absl::Now() < warm_end;
        auto length = [&] { return largest ? 70 : RandomLength(&rng); };
        const int kind = (i + w) % 10;
        if (kind < 5) {
          v1::ClassifyRequest r;
          const int n =
              largest ? 16 : std::uniform_int_distribution<int>(1, 16)(rng);
          for (int k = 0; k < n; ++k) *r.add_inputs() = Input(&rng, length());
          if (i % 3 == 0) {
            auto* h = r.mutable_head_mask()->mutable_ablate()->add_heads();
            h->set_layer(i % kLayers);
            h->set_head(w % kHeads);
          }
          tally.Add("Classify", Classify(stub.get(), r, deadline));
        } else if (kind < 8) {
          v1::GetAttentionRequest r;
          *r.mutable_input() = Input(&rng, length());
          r.add_layers(i % kLayers);
          r.add_layers((i + 5) % kLayers);
          tally.Add("GetAttention", GetAttention(stub.get(), r, deadline));
        } else if (kind == 8) {
          const int n =
              largest ? 8 : std::uniform_int_distribution<int>(2, 8)(rng);
          tally.Add(
              "SweepAblation",
              Sweep(stub.get(),
                    SweepRequest(LabeledExamples(&rng, n, length()), 4, i),
                    deadline));
        } else {
          const BadCall& b = bad[(i / 10 + w) % bad.size()];
          tally.AddBad(b, b.call(stub.get(), &rng));
        }
      }
    });
  }
  // Resident memory twice a second.
  std::vector<std::pair<double, double>> rss;  // (seconds, MiB)
  while (absl::Now() < end) {
    rss.push_back(
        {absl::ToDoubleSeconds(absl::Now() - start), RssMiB(*server)});
    absl::SleepFor(absl::Milliseconds(500));
  }
  for (auto& t : workers) t.join();
  std::string trace;
  for (size_t i = 0; i < rss.size(); i += 10) {
    absl::StrAppend(&trace, " ", static_cast<int>(rss[i].first),
                    "s:", static_cast<int>(rss[i].second));
  }
  std::printf("soak: RSS MiB every 5 s:%s\n", trace.c_str());
  rss.push_back({absl::ToDoubleSeconds(absl::Now() - start), RssMiB(*server)});

  // After warm-up: the median of the 5 s after it; at the end: the median
  // of the last 5 s (medians: single samples jump by tens of MiB as
  // sweeps come and go).
  auto median = [&](double from, double to) {
    std::vector<double> v;
    for (const auto& [t, mib] : rss) {
      if (t >= from && t < to) v.push_back(mib);
    }
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double after_warmup = median(warm_s, warm_s + 5);
  const double at_end = median(seconds - 5, seconds + 60);
  // The highest sample after warm-up (printed), and the highest median of
  // a 5 s window after it (checked: a single sample is high whenever a
  // sweep and a batch of long inputs meet).
  double peak_after = 0, highest_window = 0;
  for (const auto& [t, mib] : rss) {
    if (t < warm_s) continue;
    peak_after = std::max(peak_after, mib);
    if (t + 5 <= seconds) {  // full windows only
      highest_window = std::max(highest_window, median(t, t + 5));
    }
  }
  std::printf(
      "soak: %.0f s, concurrency %d, %d calls (%d ok, %d deliberate bad, %d "
      "of them with the right code), %zu unexpected\n",
      seconds, kConcurrency, tally.calls, tally.ok, tally.deliberate,
      tally.deliberate_right, tally.unexpected.size());
  for (const auto& [method, l] : tally.latency) {
    std::printf(
        "soak: %-13s %6zu ok, p50 %7.1f ms, p99 %7.1f ms, max %7.1f ms\n",
        method.c_str(), l.size(), Percentile(l, 0.5), Percentile(l, 0.99),
        Percentile(l, 1.0));
  }
  std::printf(
      "soak: RSS %.1f MiB at the start, %.1f MiB after warm-up (%.0f s), "
      "peak after it %.1f MiB (highest 5 s median %.1f MiB), %.1f MiB at the "
      "end\n",
      rss.front().second, after_warmup, warm_s, peak_after, highest_window,
      at_end);

  for (const auto& u : tally.unexpected) ADD_FAILURE() << u;
  EXPECT_EQ(tally.deliberate_right, tally.deliberate);
  EXPECT_GT(tally.deliberate, 0);
  EXPECT_EQ(tally.ok + tally.deliberate, tally.calls);
  // Every kind of call ran, several times.
  for (const char* m : {"Classify", "GetAttention", "SweepAblation"}) {
    EXPECT_GE(tally.latency[m].size(), 5u) << m;
  }
  // p99 bounds: alone these calls take milliseconds (Classify, GetAttention)
  // and under a second (a sweep of <= 8 x 5 pairs); the bounds leave room
  // for a loaded 2-core machine, not for a queue that grows or a call that
  // hangs.
  // Classify waits for batches of up to 32 rows of 64 tokens (about 0.3 s
  // each here, 2.6 s at p99 seen with the other tests' builds running).
  EXPECT_LT(Percentile(tally.latency["Classify"], 0.99), 8000);
  EXPECT_LT(Percentile(tally.latency["GetAttention"], 0.99), 3000);
  EXPECT_LT(Percentile(tally.latency["SweepAblation"], 0.99), 15000);
  // Flat after warm-up: a leak of a few KiB per call would pass this in the
  // 30 s run but not in a long one; a leak per sweep or per batch shape
  // shows in either. (Before --malloc_arenas, with glibc's default arenas,
  // RSS kept growing: 60-80 MiB after warm-up in runs of 20 s and 90 s.)
  // Under ASan the server runs on ASan's allocator, whose quarantine holds
  // freed memory back for a while by design (make test-asan: +30-50 MiB in
  // the 30 s run): the bounds are for the production allocator, which the
  // plain build's run of this test checks.
  if (kUnderAddressSanitizer) {
    std::printf("soak: RSS bounds not checked under ASan\n");
  } else {
    EXPECT_LT(at_end - after_warmup, 24.0);
    EXPECT_LT(highest_window - after_warmup, 32.0);
  }
  server->Signal(SIGTERM);
  auto exit = server->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 0);
}

// ------------------------------------------------------ SIGTERM under load

TEST(LoadFaultTest, SigtermUnderLoad) {
  constexpr int kGraceS = 10;
  for (int round = 0; round < Rounds(60); ++round) {
    auto server = StartServer({absl::StrCat("--grace_period_s=", kGraceS)});
    ASSERT_NE(server, nullptr);
    struct Call {
      std::string method;
      absl::Time start;
      Outcome outcome;
    };
    std::mutex mu;
    std::vector<Call> calls;
    std::atomic<bool> stop{false};
    const absl::Duration deadline = absl::Seconds(60);
    // Records a call; after a refusal the client waits 100 ms, as a real
    // one backs off.
    auto record = [&](const std::string& method, absl::Time start,
                      const Outcome& o) {
      {
        std::lock_guard<std::mutex> lock(mu);
        calls.push_back({method, start, o});
      }
      if (o.code != StatusCode::OK) absl::SleepFor(absl::Milliseconds(100));
    };
    std::vector<std::thread> workers;
    for (int w = 0; w < 6; ++w) {
      workers.emplace_back([&, w] {
        std::mt19937 rng(200 + w + round);
        auto stub = server->NewStub();
        for (int i = 0; !stop.load(); ++i) {
          const absl::Time start = absl::Now();
          if ((i + w) % 3 == 0) {
            v1::ClassifyRequest r;
            for (int k = 0; k < 1 + i % 8; ++k) {
              *r.add_inputs() = Input(&rng, RandomLength(&rng));
            }
            record("Classify", start, Classify(stub.get(), r, deadline));
          } else if ((i + w) % 3 == 1) {
            v1::GetAttentionRequest r;
            *r.mutable_input() = Input(&rng, RandomLength(&rng));
            r.add_layers(i % kLayers);
            record("GetAttention", start,
                   GetAttention(stub.get(), r, deadline));
          } else {
            record("SweepAblation", start,
                   Sweep(stub.get(),
                         SweepRequest(LabeledExamples(&rng, 2 + i % 4), 3, i),
                         deadline));
          }
        }
      });
    }
    // A sweep that the drain must let finish (a few seconds, well inside the
    // grace), and one that cannot finish inside it (cancelled at the end of
    // the grace period).
    std::mt19937 rng(7);
    const v1::SweepAblationRequest long_request =
        SweepRequest(LabeledExamples(&rng, 12, 40), 6, 3);
    v1::SweepAblationRequest endless_request =
        SweepRequest(LabeledExamples(&rng, 400, 64), 1, 1);
    endless_request.add_masks()->mutable_all_single_heads();
    Outcome drained, cut;
    std::atomic<int> drained_results{0};
    std::thread long_sweep([&] {
      auto stub = server->NewStub();
      drained = Sweep(stub.get(), long_request, deadline);
    });
    std::thread endless_sweep([&] {
      auto stub = server->NewStub();
      const v1::SweepAblationRequest& r = endless_request;
      cut = Sweep(stub.get(), r, deadline, nullptr,
                  [&](const v1::SweepAblationResponse& e) {
                    if (e.has_result()) ++drained_results;
                  });
    });
    absl::SleepFor(absl::Seconds(2.5));
    const absl::Time sigterm = absl::Now();
    server->Signal(SIGTERM);
    // Clients keep calling through the drain until the server is gone.
    auto exit = server->WaitExit(absl::Seconds(kGraceS + 20));
    const absl::Duration exit_after = absl::Now() - sigterm;
    absl::SleepFor(absl::Milliseconds(500));
    stop = true;
    for (auto& t : workers) t.join();
    long_sweep.join();
    endless_sweep.join();
    ASSERT_TRUE(exit.ok()) << exit.status() << "\n" << server->Log();
    EXPECT_EQ(*exit, 0) << server->Log();
    EXPECT_LT(exit_after, absl::Seconds(kGraceS + 5));

    int ok = 0, unavailable = 0, cancelled = 0, after_ok = 0;
    for (const Call& c : calls) {
      const Outcome& o = c.outcome;
      if (o.code == StatusCode::OK) {
        ++ok;
        EXPECT_TRUE(o.complete) << c.method << " answered OK with less";
        if (c.start > sigterm) ++after_ok;
      } else if (o.code == StatusCode::UNAVAILABLE) {
        ++unavailable;
      } else if (o.code == StatusCode::CANCELLED) {
        ++cancelled;
      } else {
        ADD_FAILURE() << c.method << ": code " << o.code << " " << o.message;
      }
      // Accepted well before the signal (running for a second already):
      // drained to the end.
      if (c.start + absl::Seconds(1) < sigterm) {
        EXPECT_EQ(o.code, StatusCode::OK) << c.method << " " << o.message;
      }
      // None hangs: all end by the end of the grace period.
      EXPECT_LT(c.start + o.latency, sigterm + absl::Seconds(kGraceS + 5))
          << c.method;
    }
    const int sent = static_cast<int>(calls.size());
    std::printf(
        "sigterm: %d calls sent: %d ok (%d of them sent after SIGTERM), %d "
        "UNAVAILABLE, %d CANCELLED, %d other; exit %d after %.1f s; long "
        "sweep %s in %.1f s; endless sweep %s after %.1f s (%d results)\n",
        sent, ok, after_ok, unavailable, cancelled,
        sent - ok - unavailable - cancelled, *exit,
        absl::ToDoubleSeconds(exit_after),
        grpc::Status(drained.code, "").ok() ? "OK" : drained.message.c_str(),
        absl::ToDoubleSeconds(drained.latency),
        cut.code == StatusCode::CANCELLED     ? "CANCELLED"
        : cut.code == StatusCode::UNAVAILABLE ? "UNAVAILABLE"
                                              : cut.message.c_str(),
        absl::ToDoubleSeconds(cut.latency), drained_results.load());
    EXPECT_EQ(sent, ok + unavailable + cancelled);
    EXPECT_GT(ok, 10);
    EXPECT_GT(unavailable, 0);  // calls after the signal are refused cleanly
    // The long sweep was accepted before the signal and drained complete.
    EXPECT_EQ(drained.code, StatusCode::OK) << drained.message;
    EXPECT_TRUE(drained.complete);
    // The endless one ran into the end of the grace period: cancelled (or
    // its connection closed), not answered OK with less, and not hung.
    EXPECT_TRUE(cut.code == StatusCode::CANCELLED ||
                cut.code == StatusCode::UNAVAILABLE)
        << cut.code << " " << cut.message;
    EXPECT_GT(cut.latency, absl::Seconds(kGraceS));
  }
}

// ------------------------------------------- a client that goes away

TEST(LoadFaultTest, ClientDisconnectMidSweep) {
  auto server = StartServer({"--sweep_cache_mb=128"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  std::mt19937 rng(11);
  // Warm the allocator with a small sweep of the same shapes.
  ASSERT_EQ(Sweep(stub.get(), SweepRequest(LabeledExamples(&rng, 32, 64), 2, 1),
                  absl::Seconds(60))
                .code,
            StatusCode::OK);
  const std::vector<v1::LabeledExample> examples =
      LabeledExamples(&rng, 400, 64);
  v1::SweepAblationRequest big = SweepRequest(examples, 1, 1);
  big.add_masks()->mutable_all_single_heads();
  for (int round = 0; round < Rounds(60); ++round) {
    absl::SleepFor(absl::Milliseconds(500));
    const double rss_before = RssMiB(*server);
    const double done_before =
        Metric(*server, "bertology_sweep_pairs_done_total");
    const double abandoned_before =
        Metric(*server, "bertology_sweep_pairs_abandoned_total",
               {{"reason", "cancelled"}});
    const double cancelled_before =
        Metric(*server, "bertology_requests_total",
               {{"method", "SweepAblation"}, {"code", "CANCELLED"}});
    grpc::ClientContext context;
    Outcome outcome;
    std::thread sweep([&] {
      outcome = Sweep(stub.get(), big, absl::Seconds(120), &context);
    });
    // Cancel once the sweep holds its cache (400 examples x 12 layers x 64
    // tokens x 96 floats: 113 MiB; RSS up 64 MiB) and masked pairs are being
    // scored.
    double rss_peak = rss_before;
    const absl::Time give_up = absl::Now() + absl::Seconds(90);
    while (absl::Now() < give_up) {
      rss_peak = std::max(rss_peak, RssMiB(*server));
      if (rss_peak > rss_before + 64 &&
          Metric(*server, "bertology_sweep_pairs_scored") >
              static_cast<double>(examples.size()) + 64) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    const double done_at_cancel =
        Metric(*server, "bertology_sweep_pairs_done_total");
    context.TryCancel();
    const absl::Time cancelled_at = absl::Now();
    sweep.join();
    EXPECT_EQ(outcome.code, StatusCode::CANCELLED) << outcome.message;
    // The server notices within a forward pass or two and lets go.
    double active = 1;
    while (absl::Now() < cancelled_at + absl::Seconds(10) && active != 0) {
      absl::SleepFor(absl::Milliseconds(50));
      active = Metric(*server, "bertology_sweeps_active");
    }
    const double stopped_s = absl::ToDoubleSeconds(absl::Now() - cancelled_at);
    EXPECT_EQ(active, 0);
    const double done_after =
        Metric(*server, "bertology_sweep_pairs_done_total");
    absl::SleepFor(absl::Seconds(1));
    // Nothing is scored any more.
    EXPECT_EQ(Metric(*server, "bertology_sweep_pairs_done_total"), done_after);
    EXPECT_EQ(Metric(*server, "bertology_inflight_rows"), 0);
    const double cancelled =
        Metric(*server, "bertology_requests_total",
               {{"method", "SweepAblation"}, {"code", "CANCELLED"}});
    EXPECT_EQ(cancelled, cancelled_before + 1);
    const double abandoned =
        Metric(*server, "bertology_sweep_pairs_abandoned_total",
               {{"reason", "cancelled"}}) -
        abandoned_before;
    // Every planned pair (baseline, 1 random mask, 144 single heads) is
    // either scored or abandoned as cancelled, most of them abandoned.
    const double planned = (kLayers * kHeads + 2) * examples.size();
    EXPECT_EQ(done_after - done_before + abandoned, planned);
    EXPECT_GT(abandoned, 0.5 * planned);
    // The cache is given back: RSS returns to within a quarter of the rise.
    double rss_after = RssMiB(*server);
    while (absl::Now() < cancelled_at + absl::Seconds(10) &&
           rss_after > rss_before + 0.25 * (rss_peak - rss_before)) {
      absl::SleepFor(absl::Milliseconds(200));
      rss_after = RssMiB(*server);
    }
    std::printf(
        "disconnect: cancelled after %.0f pairs (%.0f scored when it stopped), "
        "server idle %.2f s after the cancel; "
        "bertology_requests_total{SweepAblation,CANCELLED} %.0f -> %.0f, "
        "abandoned{cancelled} %.0f; RSS %.1f MiB before, %.1f peak, %.1f "
        "after\n",
        done_at_cancel - done_before, done_after - done_before, stopped_s,
        cancelled_before, cancelled, abandoned, rss_before, rss_peak,
        rss_after);
    EXPECT_GT(rss_peak, rss_before + 64);
    EXPECT_LT(rss_after, rss_before + 0.25 * (rss_peak - rss_before));
  }
}

// ----------------------------------------------------------------- overload

TEST(LoadFaultTest, OverloadedSweepsAreRefusedAtOnce) {
  // Two sweeps of 16 batch rows (one worker each) fill a budget of 32.
  auto server = StartServer(
      {"--max_queued_rows=32", "--max_batch_size=16", "--sweep_workers=1"});
  ASSERT_NE(server, nullptr);
  std::mt19937 rng(5);
  const std::vector<v1::LabeledExample> long_examples =
      LabeledExamples(&rng, 300, 64);
  const std::vector<v1::LabeledExample> small_examples =
      LabeledExamples(&rng, 4, 20);
  for (int round = 0; round < Rounds(60); ++round) {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<Outcome> long_outcomes(2);
    std::atomic<int> admitted{0};
    std::vector<std::thread> long_sweeps;
    for (int i = 0; i < 2; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      long_sweeps.emplace_back([&, i] {
        v1::SweepAblationRequest r = SweepRequest(long_examples, 1, i);
        r.add_masks()->mutable_all_single_heads();
        long_outcomes[i] =
            Sweep(server->NewStub().get(), r, absl::Seconds(120),
                  contexts[i].get(), [&](const v1::SweepAblationResponse& e) {
                    if (e.has_plan()) ++admitted;
                  });
      });
    }
    const absl::Time wait_until = absl::Now() + absl::Seconds(30);
    while (admitted.load() < 2 && absl::Now() < wait_until) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    ASSERT_EQ(admitted.load(), 2);
    // Six more at once: each is refused at once, naming the flag.
    constexpr int kExtra = 6;
    std::vector<Outcome> extra(kExtra);
    std::vector<std::thread> extra_threads;
    for (int i = 0; i < kExtra; ++i) {
      extra_threads.emplace_back([&, i] {
        extra[i] =
            Sweep(server->NewStub().get(),
                  SweepRequest(small_examples, 3, 10 + i), absl::Seconds(120));
      });
    }
    for (auto& t : extra_threads) t.join();
    std::string codes;
    for (const Outcome& o : extra) {
      absl::StrAppend(&codes, " ", o.code, " (",
                      absl::ToInt64Milliseconds(o.latency), " ms)");
      EXPECT_EQ(o.code, StatusCode::RESOURCE_EXHAUSTED) << o.message;
      EXPECT_TRUE(absl::StrContains(o.message, "--max_queued_rows=32"))
          << o.message;
      EXPECT_LT(o.latency, absl::Seconds(2));
    }
    // Not queued: the two long ones are all that runs; Classify still
    // answers.
    EXPECT_EQ(Metric(*server, "bertology_sweeps_active"), 2);
    v1::ClassifyRequest classify;
    *classify.add_inputs() = Input(&rng, 30);
    const Outcome c =
        Classify(server->NewStub().get(), classify, absl::Seconds(30));
    EXPECT_EQ(c.code, StatusCode::OK) << c.message;
    const double refused =
        Metric(*server, "bertology_requests_total",
               {{"method", "SweepAblation"}, {"code", "RESOURCE_EXHAUSTED"}});
    EXPECT_EQ(refused, kExtra * (round + 1));
    for (auto& context : contexts) context->TryCancel();
    for (auto& t : long_sweeps) t.join();
    for (const Outcome& o : long_outcomes) {
      EXPECT_EQ(o.code, StatusCode::CANCELLED) << o.message;
    }
    // Their handlers notice within a forward pass and give the rows back.
    const absl::Time idle_by = absl::Now() + absl::Seconds(10);
    while (Metric(*server, "bertology_sweeps_active") != 0 &&
           absl::Now() < idle_by) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    // The rows are given back: a sweep is admitted again.
    const Outcome after =
        Sweep(server->NewStub().get(), SweepRequest(small_examples, 3, 99),
              absl::Seconds(60));
    EXPECT_EQ(after.code, StatusCode::OK) << after.message;
    EXPECT_TRUE(after.complete);
    std::printf(
        "overload: 2 sweeps running (32 of 32 rows), %d more refused:%s; "
        "Classify meanwhile %s in %.0f ms; after they ended a sweep got %s\n",
        kExtra, codes.c_str(), c.code == StatusCode::OK ? "OK" : "failed",
        absl::ToDoubleMilliseconds(c.latency),
        after.code == StatusCode::OK ? "OK" : after.message.c_str());
  }
}

}  // namespace
}  // namespace testing
}  // namespace bertology
