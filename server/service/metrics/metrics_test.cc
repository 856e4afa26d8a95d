// ServiceMetrics: the gauges of running sweeps, abandoned pairs never counted
// as done, bertology_inflight_rows, and the process_* metrics, read back from
// the text a scrape returns (ServiceMetrics::Render).
#include "server/service/metrics/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

// The value of the sample `series` (name plus labels exactly as the text
// format writes them, e.g. `x{model="m"}`), or nullopt when absent.
std::optional<double> Sample(const std::string& text,
                             const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!absl::StartsWith(line, series + " ")) continue;
    double value;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
  }
  return std::nullopt;
}

std::unique_ptr<ServiceMetrics> Metrics() {
  absl::StatusOr<std::unique_ptr<ServiceMetrics>> m =
      ServiceMetrics::Create("");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(SweepMetricsTest, GaugesDescribeOnlyTheSweepsRunningNow) {
  auto m = Metrics();
  ASSERT_NE(m, nullptr);
  auto a = m->StartSweep("tiny", 100);
  auto b = m->StartSweep("tiny", 50);
  a->AddScored(30);
  b->AddScored(10);
  std::string text = m->Render();
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_planned{model=\"tiny\"}"), 150);
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_scored{model=\"tiny\"}"), 40);
  EXPECT_EQ(Sample(text, "bertology_sweeps_active"), 2);
  EXPECT_EQ(Sample(text, "bertology_inflight_rows"), 110);

  a->Finish(absl::OkStatus());  // 70 pairs left: a bug, counted as failed
  a.reset();
  text = m->Render();
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_planned{model=\"tiny\"}"), 50);
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_scored{model=\"tiny\"}"), 10);
  EXPECT_EQ(Sample(text, "bertology_sweeps_active"), 1);
  EXPECT_EQ(Sample(text, "bertology_inflight_rows"), 40);
  EXPECT_EQ(
      Sample(text, "bertology_sweep_pairs_abandoned_total{reason=\"failed\"}"),
      70);

  b->AddScored(40);
  b->Finish(absl::OkStatus());
  b.reset();
  text = m->Render();
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_planned{model=\"tiny\"}"), 0);
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_scored{model=\"tiny\"}"), 0);
  EXPECT_EQ(Sample(text, "bertology_sweeps_active"), 0);
  EXPECT_EQ(Sample(text, "bertology_inflight_rows"), 0);
  // Lifetime counters keep everything for rate().
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_total"), 150);
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_done_total"), 80);
  EXPECT_EQ(
      Sample(text,
             "bertology_sweep_pairs_abandoned_total{reason=\"cancelled\"}"),
      0);
}

TEST(SweepMetricsTest, CancelledPairsAreAbandonedNotDone) {
  auto m = Metrics();
  ASSERT_NE(m, nullptr);
  {
    auto sweep = m->StartSweep("tiny", 1000);
    sweep->AddScored(120);
    sweep->Finish(absl::CancelledError("the client went away"));
  }
  {
    auto sweep = m->StartSweep("tiny", 10);
    sweep->Finish(absl::DeadlineExceededError("deadline"));
  }
  const std::string text = m->Render();
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_done_total"), 120);
  EXPECT_EQ(
      Sample(text,
             "bertology_sweep_pairs_abandoned_total{reason=\"cancelled\"}"),
      890);
  EXPECT_EQ(
      Sample(text, "bertology_sweep_pairs_abandoned_total{reason=\"failed\"}"),
      0);
  EXPECT_EQ(Sample(text, "bertology_inflight_rows"), 0);
}

TEST(SweepMetricsTest, AHandlerLeftWithoutFinishCountsAsFailed) {
  auto m = Metrics();
  ASSERT_NE(m, nullptr);
  {
    auto sweep = m->StartSweep("tiny", 8);
    sweep->AddScored(3);
    sweep->AddScored(100);  // clamped to the 5 left
    EXPECT_EQ(sweep->scored(), 8);
  }
  {
    auto sweep = m->StartSweep("tiny", 8);
    sweep->AddScored(2);
  }  // e.g. an exception: no Finish
  const std::string text = m->Render();
  EXPECT_EQ(Sample(text, "bertology_sweep_pairs_done_total"), 10);
  EXPECT_EQ(
      Sample(text, "bertology_sweep_pairs_abandoned_total{reason=\"failed\"}"),
      6);
  EXPECT_EQ(Sample(text, "bertology_sweeps_active"), 0);
}

TEST(ServiceMetricsTest, InflightRowsFollowClassifyRows) {
  auto m = Metrics();
  ASSERT_NE(m, nullptr);
  m->AddInflightRows(7);
  EXPECT_EQ(Sample(m->Render(), "bertology_inflight_rows"), 7);
  m->AddInflightRows(-7);
  EXPECT_EQ(Sample(m->Render(), "bertology_inflight_rows"), 0);
}

TEST(ProcessMetricsTest, StatsArePlausible) {
  absl::StatusOr<ProcessStats> before = ReadProcessStats();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_GT(before->resident_bytes, 1 << 20);  // a gtest binary: > 1 MiB
  EXPECT_GE(before->virtual_bytes, before->resident_bytes);
  EXPECT_GE(before->open_fds, 3);  // stdin, stdout, stderr
  EXPECT_GE(before->max_fds, before->open_fds);
  EXPECT_GE(before->cpu_seconds, 0);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(before->start_time_seconds, now + 1);
  EXPECT_GT(before->start_time_seconds, now - 3600);

  // Open descriptors are counted as they are (opendir's own is not).
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(open("/dev/null", O_RDONLY));
  absl::StatusOr<ProcessStats> after = ReadProcessStats();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->open_fds, before->open_fds + 5);
  for (int fd : fds) close(fd);

  // CPU time grows with work done.
  volatile double x = 0;
  const std::clock_t start = std::clock();
  while (std::clock() - start < CLOCKS_PER_SEC / 5) x = x + 1;
  absl::StatusOr<ProcessStats> busy = ReadProcessStats();
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_GT(busy->cpu_seconds, before->cpu_seconds);
}

// Render() is what GET /metrics answers (metrics_http_server.cc calls it).
TEST(ProcessMetricsTest, TheScrapeTextHasThemWithTheServiceMetrics) {
  auto m = Metrics();
  ASSERT_NE(m, nullptr);
  const std::string text = m->Render();
  EXPECT_GT(Sample(text, "process_resident_memory_bytes").value_or(0), 0);
  EXPECT_GE(Sample(text, "process_open_fds").value_or(0), 3);
  EXPECT_GT(Sample(text, "process_max_fds").value_or(0), 0);
  EXPECT_GT(Sample(text, "process_virtual_memory_bytes").value_or(0), 0);
  EXPECT_GT(Sample(text, "process_start_time_seconds").value_or(0), 1e9);
  EXPECT_TRUE(Sample(text, "process_cpu_seconds_total").has_value());
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"),
            std::string::npos);
  EXPECT_EQ(Sample(text, "bertology_inflight_rows"), 0);
  EXPECT_EQ(Sample(text, "bertology_sweeps_active"), 0);
}

}  // namespace
}  // namespace bertology
