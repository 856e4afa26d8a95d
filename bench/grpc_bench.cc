// Measurements over real gRPC against a running bertology-server (issue 6,
// items d and e):
//   classify:  N closed-loop clients, each sending one-input Classify calls
//              back to back for --seconds; p50/p99 latency and calls/s.
//   attention: GetAttention of all layers x heads for one input of exactly
//              --attention_tokens tokens, FLOAT32 vs FLOAT16: response bytes
//              (the protobuf payload) and median latency.
// Client and server share this machine's cores, so at high concurrency the
// client's own CPU time is part of what is measured.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/bench_stats.h"
#include "bertology/v1/bertology.grpc.pb.h"
#include "common/pair_dataset.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "Server address.");
ABSL_FLAG(std::string, data, "", "TSV text_a, text_b, label.");
ABSL_FLAG(std::string, clients, "1,8,32", "Concurrent clients to try.");
ABSL_FLAG(double, seconds, 3, "Measured seconds per concurrency.");
ABSL_FLAG(double, warmup_seconds, 0.5, "Unmeasured seconds before that.");
ABSL_FLAG(bool, classify, true, "Run the Classify load test.");
ABSL_FLAG(bool, attention, false, "Run the GetAttention test.");
ABSL_FLAG(int, attention_tokens, 128, "Tokens of the GetAttention input.");
ABSL_FLAG(int, attention_reps, 5, "Timed GetAttention calls per encoding.");
ABSL_FLAG(double, wait_seconds, 180, "How long to wait for the server.");
ABSL_FLAG(std::string, json_out, "", "Where to write the JSON result.");

namespace bertology::bench {
namespace {

namespace pb = ::bertology::v1;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::shared_ptr<grpc::Channel> Connect(int index) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetInt("bertology.bench.channel", index);  // distinct connections
  return grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target),
                                   grpc::InsecureChannelCredentials(), args);
}

// Waits until a Classify call succeeds (the server is up and warm).
bool WaitForServer(pb::Bertology::Stub& stub, const pb::TextInput& input) {
  const auto deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(absl::GetFlag(FLAGS_wait_seconds)));
  while (Clock::now() < deadline) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    pb::ClassifyRequest request;
    *request.add_inputs() = input;
    pb::ClassifyResponse response;
    if (stub.Classify(&context, request, &response).ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

json ClassifyLoad(const std::vector<pb::TextInput>& inputs, int clients) {
  const int channels = std::min(clients, 4);
  std::vector<std::unique_ptr<pb::Bertology::Stub>> stubs;
  for (int i = 0; i < channels; ++i) {
    stubs.push_back(pb::Bertology::NewStub(Connect(i)));
  }
  const auto start = Clock::now();
  const auto measure_from =
      start +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(absl::GetFlag(FLAGS_warmup_seconds)));
  const auto stop =
      measure_from +
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(absl::GetFlag(FLAGS_seconds)));
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      pb::Bertology::Stub& stub = *stubs[c % channels];
      for (size_t i = c; Clock::now() < stop; i += clients) {
        pb::ClassifyRequest request;
        *request.add_inputs() = inputs[i % inputs.size()];
        pb::ClassifyResponse response;
        grpc::ClientContext context;
        const auto t0 = Clock::now();
        const grpc::Status status = stub.Classify(&context, request, &response);
        const auto t1 = Clock::now();
        if (!status.ok()) {
          ++errors;
          continue;
        }
        // Calls that finish inside the window count.
        if (t0 >= measure_from && t1 <= stop) {
          latencies[c].push_back(Seconds(t1 - t0));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  return json{{"clients", clients},
              {"calls", all.size()},
              {"errors", errors.load()},
              {"calls_per_s", all.size() / absl::GetFlag(FLAGS_seconds)},
              {"p50_ms", 1e3 * Percentile(all, 0.5)},
              {"p99_ms", 1e3 * Percentile(all, 0.99)}};
}

// The longest prefix (in code points) of `text` whose encoding has at most
// `tokens` tokens, by binary search over Tokenize calls.
std::string PrefixWithTokens(pb::Bertology::Stub& stub, const std::string& text,
                             int tokens, int* got) {
  std::vector<size_t> cuts;  // byte offsets of code point ends
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() ||
        (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      cuts.push_back(i);
  }
  auto count = [&](size_t n) {
    grpc::ClientContext context;
    pb::TokenizeRequest request;
    request.set_text_a(text.substr(0, cuts[n - 1]));
    pb::TokenizeResponse response;
    if (!stub.Tokenize(&context, request, &response).ok()) return 1 << 30;
    return response.tokens_size();
  };
  size_t lo = 1, hi = cuts.size();
  while (lo < hi) {  // largest n with count(n) <= tokens
    const size_t mid = (lo + hi + 1) / 2;
    if (count(mid) <= tokens) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  *got = count(lo);
  return text.substr(0, cuts[lo - 1]);
}

json AttentionBench(pb::Bertology::Stub& stub,
                    const std::vector<pb::TextInput>& inputs) {
  std::string text;
  for (size_t i = 0; text.size() < 4096 && i < inputs.size(); ++i) {
    text += inputs[i].text_a() + inputs[i].text_b();
  }
  int tokens = 0;
  pb::GetAttentionRequest request;
  request.mutable_input()->set_text_a(PrefixWithTokens(
      stub, text, absl::GetFlag(FLAGS_attention_tokens), &tokens));
  json out = {{"tokens", tokens}};
  for (auto [name, encoding] :
       {std::pair{"float32", pb::ATTENTION_ENCODING_FLOAT32},
        std::pair{"float16", pb::ATTENTION_ENCODING_FLOAT16}}) {
    request.set_encoding(encoding);
    std::vector<double> times;
    size_t bytes = 0;
    int maps = 0;
    for (int r = 0; r <= absl::GetFlag(FLAGS_attention_reps); ++r) {
      grpc::ClientContext context;
      pb::GetAttentionResponse response;
      const auto t0 = Clock::now();
      grpc::Status status = stub.GetAttention(&context, request, &response);
      if (!status.ok()) {
        out[name] = {{"error", status.error_message()}};
        break;
      }
      if (r > 0) times.push_back(Seconds(Clock::now() - t0));  // r=0: warm-up
      bytes = response.ByteSizeLong();
      maps = response.maps_size();
    }
    if (!times.empty()) {
      out[name] = {{"maps", maps},
                   {"bytes", bytes},
                   {"p50_ms", 1e3 * Percentile(times, 0.5)}};
    }
  }
  return out;
}

int Main() {
  PairDatasetOptions options;
  options.format = PairDatasetOptions::Format::kTsv;
  options.header = PairDatasetOptions::Header::kNo;
  options.limit = 1000;
  auto rows = ReadPairDataset(absl::GetFlag(FLAGS_data), options);
  if (!rows.ok() || rows->empty()) {
    std::cerr << "no data: " << rows.status() << "\n";
    return 1;
  }
  std::vector<pb::TextInput> inputs;
  for (const PairExample& row : *rows) {
    pb::TextInput input;
    input.set_text_a(row.text_a);
    input.set_text_b(row.text_b);
    inputs.push_back(input);
  }
  auto stub = pb::Bertology::NewStub(Connect(100));
  if (!WaitForServer(*stub, inputs[0])) {
    std::cerr << "server at " << absl::GetFlag(FLAGS_target)
              << " did not answer Classify\n";
    return 1;
  }
  json result = json::object();
  if (absl::GetFlag(FLAGS_classify)) {
    result["classify"] = json::array();
    for (absl::string_view n :
         absl::StrSplit(absl::GetFlag(FLAGS_clients), ',')) {
      int clients = 0;
      if (!absl::SimpleAtoi(n, &clients) || clients < 1) continue;
      result["classify"].push_back(ClassifyLoad(inputs, clients));
      std::cerr << result["classify"].back().dump() << "\n";
    }
  }
  if (absl::GetFlag(FLAGS_attention)) {
    result["attention"] = AttentionBench(*stub, inputs);
  }
  EmitResult(result, absl::GetFlag(FLAGS_json_out));
  return 0;
}

}  // namespace
}  // namespace bertology::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return bertology::bench::Main();
}
