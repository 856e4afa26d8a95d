// Three replicas on loopback; the scheduler shards a sweep over them (one
// channel per replica, then one round_robin channel); one replica is
// SIGKILLed part-way. The merged result must equal one unsharded call.
#include <signal.h>

#include <atomic>

#include "gtest/gtest.h"
#include "tests/lb/replica_fleet.h"

namespace bertology {
namespace testing {
namespace {

class ReplicaFailoverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto r = StartReplicas(3);
    ASSERT_TRUE(r.ok()) << r.status();
    replicas_ = new std::vector<std::unique_ptr<ServerProcess>>(*std::move(r));
  }
  static void TearDownTestSuite() {
    delete replicas_;
    replicas_ = nullptr;
  }
  static std::vector<std::unique_ptr<ServerProcess>>* replicas_;
};
std::vector<std::unique_ptr<ServerProcess>>* ReplicaFailoverTest::replicas_ =
    nullptr;

client::SchedulerOptions Options() {
  client::SchedulerOptions o;
  o.sharding = {/*masks_per_shard=*/2, /*examples_per_shard=*/20};
  o.max_inflight = 1;
  o.shard_timeout = absl::Seconds(60);
  o.initial_backoff = absl::Milliseconds(50);
  o.max_backoff = absl::Milliseconds(500);
  return o;
}

TEST_F(ReplicaFailoverTest, RoundRobinChannelMergesExactly) {
  ASSERT_NE(replicas_, nullptr);
  const auto examples = Examples(40);
  auto reference = SingleCallSweep(*(*replicas_)[0], examples);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto targets =
      client::ParseTargets(TargetList(*replicas_), {/*round_robin_list=*/true});
  ASSERT_TRUE(targets.ok());
  ASSERT_EQ(targets->size(), 1u);
  auto executor = client::NewGrpcShardExecutor(*targets);
  auto run = client::ScheduleSweep(Job(examples), executor.get(), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(CompareWithSingleCall(run->summary, *reference), "");
  // round_robin spread the shards over every replica.
  EXPECT_EQ(run->shards_by_peer.size(), 3u);
}

TEST_F(ReplicaFailoverTest, KilledReplicaCostsTimeNotResults) {
  ASSERT_NE(replicas_, nullptr);
  const auto examples = Examples(40);
  auto reference = SingleCallSweep(*(*replicas_)[0], examples);
  ASSERT_TRUE(reference.ok()) << reference.status();
  auto targets = client::ParseTargets(TargetList(*replicas_));
  ASSERT_TRUE(targets.ok());
  ASSERT_EQ(targets->size(), 3u);
  auto executor = client::NewGrpcShardExecutor(*targets);
  ServerProcess* victim = (*replicas_)[1].get();
  std::atomic<bool> killed{false};
  int total = 0;
  auto run = client::ScheduleSweep(
      Job(examples), executor.get(), Options(),
      [&](const client::SweepProgressSnapshot& s) {
        total = s.shards_total;
        if (s.shards_done >= 4 && !killed.exchange(true)) {
          victim->Signal(SIGKILL);
        }
      });
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(killed.load());
  EXPECT_FALSE(victim->Running());
  EXPECT_EQ(CompareWithSingleCall(run->summary, *reference), "");
  EXPECT_GT(total, 10);
  // The dead replica's shards were retried elsewhere.
  EXPECT_GT(run->channels[1].failures, 0);
  EXPECT_GT(run->retries, 0);
  EXPECT_GT(run->channels[0].shards_ok, 0);
  EXPECT_GT(run->channels[2].shards_ok, 0);
}

}  // namespace
}  // namespace testing
}  // namespace bertology
