// SweepMetricsExporter over a real socket: it binds port 0, serves the
// gauges with the caller's labels, and reports bad flags as errors.
#include "client/cli/sweep_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

constexpr char kLabels[] = R"({part="2/4",sweep="abc123"})";

// The whole HTTP response to GET `path` from 127.0.0.1:`port`.
std::string Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), 0) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
        response.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return response;
}

std::optional<double> Sample(const std::string& text, const std::string& name) {
  const std::string series = name + kLabels + " ";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    double value;
    if (absl::StartsWith(line, series) &&
        absl::SimpleAtod(line.substr(series.size()), &value)) {
      return value;
    }
  }
  return std::nullopt;
}

std::unique_ptr<SweepMetricsExporter> StartOrDie() {
  auto e = SweepMetricsExporter::Start("127.0.0.1:0",
                                       {{"sweep", "abc123"}, {"part", "2/4"}});
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(e).value() : nullptr;
}

TEST(SweepMetricsExporterTest, ServesTheLastUpdateWithItsLabels) {
  auto e = StartOrDie();
  ASSERT_NE(e, nullptr);
  ASSERT_GT(e->port(), 0);
  std::string text = Get(e->port(), "/metrics");
  ASSERT_NE(text.find("200 OK"), std::string::npos) << text;
  EXPECT_EQ(Sample(text, "bertology_sweep_job_pairs_done"), 0);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_pairs_total"), 0);

  SweepProgressSnapshot s;
  s.pairs_done = 1234567890123;  // beyond 32 bits
  s.pairs_total = 2000000000000;
  s.shards_done = 7;
  s.shards_total = 40;
  s.shards_resumed = 3;
  s.retries = 2;
  s.inflight = 4;
  s.replicas = 3;
  e->Update(s);
  text = Get(e->port(), "/metrics");
  EXPECT_EQ(Sample(text, "bertology_sweep_job_pairs_done"), 1234567890123.0)
      << text;
  EXPECT_EQ(Sample(text, "bertology_sweep_job_pairs_total"), 2e12);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_shards_done"), 7);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_shards_total"), 40);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_shards_resumed"), 3);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_retries"), 2);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_inflight_shards"), 4);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_replicas"), 3);
  EXPECT_NE(text.find("# TYPE bertology_sweep_job_pairs_done gauge"),
            std::string::npos);

  s.shards_done = 8;
  s.inflight = 0;
  e->Update(s);
  text = Get(e->port(), "/metrics");
  EXPECT_EQ(Sample(text, "bertology_sweep_job_shards_done"), 8);
  EXPECT_EQ(Sample(text, "bertology_sweep_job_inflight_shards"), 0);
}

TEST(SweepMetricsExporterTest, TwoExportersGetTheirOwnPorts) {
  auto a = StartOrDie();
  auto b = StartOrDie();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->port(), b->port());
  SweepProgressSnapshot s;
  s.pairs_done = 5;
  a->Update(s);
  EXPECT_EQ(
      Sample(Get(a->port(), "/metrics"), "bertology_sweep_job_pairs_done"), 5);
  EXPECT_EQ(
      Sample(Get(b->port(), "/metrics"), "bertology_sweep_job_pairs_done"), 0);
}

TEST(SweepMetricsExporterTest, StopsServingWhenDestroyed) {
  auto e = StartOrDie();
  ASSERT_NE(e, nullptr);
  const int port = e->port();
  e.reset();
  EXPECT_EQ(Get(port, "/metrics"), "");
}

TEST(SweepMetricsExporterTest, BadFlagsAreErrors) {
  EXPECT_EQ(SweepMetricsExporter::Start("127.0.0.1", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SweepMetricsExporter::Start("127.0.0.1:http", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SweepMetricsExporter::Start("127.0.0.1:70000", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SweepMetricsExporter::Start("[::1]:0", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SweepMetricsExporter::Start("127.0.0.1:0", {{"bad-label", "x"}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A port someone else holds.
  auto held = StartOrDie();
  ASSERT_NE(held, nullptr);
  auto clash = SweepMetricsExporter::Start(
      "127.0.0.1:" + std::to_string(held->port()), {});
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kUnavailable)
      << clash.status();
}

}  // namespace
}  // namespace client
}  // namespace bertology
