// Three replicas behind one DNS name, the way a Kubernetes headless Service
// presents pods: the real `bertology sweep --target=dns:///NAME:PORT` looks
// the name up (here in its own /etc/hosts, bind-mounted in a private mount
// namespace, so the machine's file is untouched), sends shards to every
// address, and looks the name up again as replicas come and go. Each
// replica's own metrics show it served shards; the 1-vs-3 replica
// throughput of the same sweep is printed.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/cli_process.h"
#include "tests/lb/replica_fleet.h"

namespace bertology {
namespace testing {
namespace {

namespace fs = std::filesystem;

constexpr char kName[] = "replicas.bertology.test";
constexpr int kExamples = 600;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DnsFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("unshare -m true 2>/dev/null") != 0) {
      GTEST_SKIP() << "needs `unshare -m` (root or user namespaces) to give "
                      "the CLI its own /etc/hosts";
    }
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("bertology_dns_fleet_", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = FreePort();
    for (int i = 0; i < 3; ++i) {
      const std::string ip = absl::StrCat("127.0.0.", i + 2);
      // One sweep worker (the same bits as two, sweep.h): sweeps long
      // enough for part 3's replicas to join part-way.
      auto r = ServerProcess::Start(
          {"--model=tiny=" + GoldenModelDir(), "--threads=1",
           "--blas_threads=1", "--sweep_workers=1",
           absl::StrCat("--listen=", ip, ":", port_)});
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE((*r)->WaitServing().ok()) << (*r)->Log();
      ips_.push_back(ip);
      replicas_.push_back(*std::move(r));
    }
    WriteDataset();
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // The dataset with the model's own label names.
  void WriteDataset() {
    v1::GetModelInfoRequest request;
    v1::GetModelInfoResponse info;
    grpc::ClientContext context;
    ASSERT_TRUE(
        replicas_[0]->NewStub()->GetModelInfo(&context, request, &info).ok());
    const auto& labels = info.models(0).label_names();
    std::ofstream out(dir_ / "data.tsv");
    out << "sentence1\tsentence2\tlabel\n";
    for (const v1::LabeledExample& e : Examples(kExamples)) {
      out << e.input().text_a() << "\t" << e.input().text_b() << "\t"
          << labels[e.label()] << "\n";
    }
  }

  // The hosts file the CLI sees: the machine's, plus kName -> `ips`.
  // Rewritten in place, so a running CLI sees the change at its next lookup.
  void SetHosts(const std::vector<std::string>& ips) {
    std::string text = Slurp("/etc/hosts");
    for (const std::string& ip : ips)
      absl::StrAppend(&text, ip, " ", kName, "\n");
    std::ofstream(dir_ / "hosts", std::ios::trunc) << text;
  }

  double SweepsServed(int replica) {
    auto metrics = replicas_[replica]->FetchMetrics();
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? OkRequests(*metrics, "SweepAblation") : 0;
  }

  // `bertology sweep` over the name, as a user in the cluster runs it.
  CliResult Sweep(const std::string& csv, double resolve_interval_s) {
    const std::vector<std::string> in_namespace = {
        "unshare",
        "-m",
        "sh",
        "-c",
        "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
        (dir_ / "hosts").string()};
    return RunCli(
        {"sweep", absl::StrCat("--target=dns:///", kName, ":", port_),
         absl::StrCat("--data=", (dir_ / "data.tsv").string()),
         "--text-a=sentence1", "--text-b=sentence2", "--label=label", "--heads",
         "--layers", "--masks-per-shard=1", "--max-inflight=1",
         absl::StrCat("--resolve-interval=", resolve_interval_s),
         absl::StrCat("--out-csv=", (dir_ / csv).string())},
        absl::Seconds(240), in_namespace);
  }

  fs::path dir_;
  int port_ = 0;
  std::vector<std::string> ips_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
};

TEST_F(DnsFleetTest, OneNameFansOutToEveryReplicaAndFollowsThem) {
  // 1. The name has one address: one replica serves everything.
  SetHosts({ips_[0]});
  absl::Time start = absl::Now();
  CliResult one = Sweep("one.csv", 10);
  const absl::Duration one_took = absl::Now() - start;
  ASSERT_EQ(one.exit_code, 0) << Describe(one);
  EXPECT_GT(SweepsServed(0), 0);
  EXPECT_EQ(SweepsServed(1) + SweepsServed(2), 0);

  // 2. Three addresses: three replicas, each with its own in-flight slot.
  SetHosts(ips_);
  std::vector<double> before = {SweepsServed(0), SweepsServed(1),
                                SweepsServed(2)};
  start = absl::Now();
  CliResult three = Sweep("three.csv", 10);
  const absl::Duration three_took = absl::Now() - start;
  ASSERT_EQ(three.exit_code, 0) << Describe(three);
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(SweepsServed(i), before[i])
        << "replica " << ips_[i] << " served no shard\n"
        << Describe(three);
  }
  EXPECT_EQ(Slurp(dir_ / "three.csv"), Slurp(dir_ / "one.csv"))
      << "the fan-out changed the results";
  // Throughput is the bench's business; this prints what one run saw.
  const double pairs = 16.0 * kExamples;  // 12 heads + 3 layers + baseline
  std::printf(
      "dns fleet: 1 replica %.0f pairs/s (%.2f s), 3 replicas %.0f pairs/s "
      "(%.2f s): %.2fx on %u cores\n",
      pairs / absl::ToDoubleSeconds(one_took), absl::ToDoubleSeconds(one_took),
      pairs / absl::ToDoubleSeconds(three_took),
      absl::ToDoubleSeconds(three_took),
      absl::ToDoubleSeconds(one_took) / absl::ToDoubleSeconds(three_took),
      std::thread::hardware_concurrency());

  // 3. Replicas come during a sweep: it starts with one address; the other
  // two appear in DNS once that one has served a shard (of 15), and must be
  // used without a restart. (A fixed sleep of a quarter of part 1's time
  // raced a faster engine: the sweep ended before the next lookup.)
  SetHosts({ips_[2]});
  before = {SweepsServed(0), SweepsServed(1), SweepsServed(2)};
  CliResult grown;
  std::atomic<bool> grown_done{false};
  std::thread sweep([&] {
    grown = Sweep("grown.csv", 0.2);
    grown_done = true;
  });
  while (!grown_done && SweepsServed(2) == before[2]) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  SetHosts(ips_);
  sweep.join();
  ASSERT_EQ(grown.exit_code, 0) << Describe(grown);
  EXPECT_GT(SweepsServed(2), before[2]);
  EXPECT_GT(SweepsServed(0) + SweepsServed(1), before[0] + before[1])
      << "replicas added to DNS mid-sweep got no shard\n"
      << Describe(grown);
  EXPECT_EQ(Slurp(dir_ / "grown.csv"), Slurp(dir_ / "one.csv"));
}

}  // namespace
}  // namespace testing
}  // namespace bertology
