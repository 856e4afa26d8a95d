// Three replicas on loopback; the scheduler shards a sweep over them (one
// channel per replica, then one round_robin channel); one replica is
// SIGKILLed part-way, one stopped (SIGSTOP) on live connections. The merged
// result must equal one unsharded call.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

  // 40 examples, the single-call reference from replica 0 and one channel
  // per replica.
  struct PerReplicaSweep {
    std::vector<v1::LabeledExample> examples;
    std::map<std::string, Reference> reference;
    std::vector<client::ChannelTarget> targets;
  };
  static void SetUpPerReplicaSweep(PerReplicaSweep* sweep) {
    ASSERT_NE(replicas_, nullptr);
    sweep->examples = Examples(40);
    auto reference = SingleCallSweep(*(*replicas_)[0], sweep->examples);
    ASSERT_TRUE(reference.ok()) << reference.status();
    sweep->reference = *std::move(reference);
    auto targets = client::ParseTargets(TargetList(*replicas_));
    ASSERT_TRUE(targets.ok());
    ASSERT_EQ(targets->size(), 3u);
    sweep->targets = *std::move(targets);
  }
};
std::vector<std::unique_ptr<ServerProcess>>* ReplicaFailoverTest::replicas_ =
    nullptr;

// 1 in make test; BERTOLOGY_SOAK_S / 60 in make soak.
int LongFormRounds() {
  const char* v = std::getenv("BERTOLOGY_SOAK_S");
  return v != nullptr && *v != '\0' ? std::max(1, std::atoi(v) / 60) : 1;
}

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

// A replica that stops answering without closing its connections (SIGSTOP:
// the kernel still holds its sockets) is left behind by the shard deadline:
// its shards time out and are retried on the others, and the result is the
// single call's. Runs before the kill test, while all three are up.
//
// It is stopped between sweeps, on the connections the unstalled sweep
// opened, not part-way through one: a stop that landed after its shard's
// last result but before the call's status (seen in make test) left that
// shard complete, nothing more was sent there, and the run showed no
// deadline failure.
TEST_F(ReplicaFailoverTest, StalledReplicaIsRoutedAroundByDeadline) {
  PerReplicaSweep sweep;
  ASSERT_NO_FATAL_FAILURE(SetUpPerReplicaSweep(&sweep));
  const auto& examples = sweep.examples;
  const auto* reference = &sweep.reference;
  const auto* targets = &sweep.targets;
  client::SchedulerOptions options = Options();
  // A shard (2 masks x 20 examples of the golden model) takes milliseconds;
  // 3 s leaves room for a loaded machine.
  options.shard_timeout = absl::Seconds(3);
  // Unstalled, for the time it takes; it opens a connection to every
  // replica, which the stalled rounds reuse.
  auto executor = client::NewGrpcShardExecutor(*targets);
  absl::Time start = absl::Now();
  {
    auto run = client::ScheduleSweep(Job(examples), executor.get(), options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(CompareWithSingleCall(run->summary, *reference), "");
    ASSERT_GT(run->channels[2].shards_ok, 0);  // its connection is open
  }
  const absl::Duration unstalled = absl::Now() - start;
  ServerProcess* victim = (*replicas_)[2].get();
  for (int round = 0; round < LongFormRounds(); ++round) {
    victim->Signal(SIGSTOP);
    start = absl::Now();
    auto run = client::ScheduleSweep(Job(examples), executor.get(), options);
    const absl::Duration stalled = absl::Now() - start;
    victim->Signal(SIGCONT);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(CompareWithSingleCall(run->summary, *reference), "");
    // The stalled replica's shards failed by deadline and went elsewhere.
    EXPECT_GT(run->channels[2].failures, 0);
    EXPECT_NE(run->channels[2].last_error.find("DEADLINE_EXCEEDED"),
              std::string::npos)
        << run->channels[2].last_error;
    EXPECT_GT(run->channels[0].shards_ok + run->channels[1].shards_ok,
              run->channels[2].shards_ok);
    // Routed around, not waited out: a few deadlines at most (each failure
    // rests the channel longer), far from max_attempts x shard_timeout per
    // shard.
    EXPECT_LT(stalled, absl::Seconds(30));
    std::printf(
        "stall: sweep of %d shards in %.1f s unstalled, %.1f s with replica "
        "2 stopped (%d deadline failures there, %d retries)\n",
        run->shards_total, absl::ToDoubleSeconds(unstalled),
        absl::ToDoubleSeconds(stalled), run->channels[2].failures,
        run->retries);
    // The replica serves again once continued.
    auto health = victim->Health();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, 1);
  }
}

TEST_F(ReplicaFailoverTest, KilledReplicaCostsTimeNotResults) {
  PerReplicaSweep sweep;
  ASSERT_NO_FATAL_FAILURE(SetUpPerReplicaSweep(&sweep));
  const auto& examples = sweep.examples;
  const auto* reference = &sweep.reference;
  const auto* targets = &sweep.targets;
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
