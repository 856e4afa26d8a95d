#include "client/scheduler/sweep_scheduler.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include "client/scheduler/fake_executor_test_util.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

SweepJob Job(int masks, int examples) {
  SweepJob job;
  for (int i = 0; i < masks; ++i) {
    PlannedMask m;
    m.id = absl::StrCat("m", i);
    m.wire.mutable_explicit_mask()->set_id(m.id);
    job.masks.push_back(m);
  }
  for (int i = 0; i < examples; ++i) {
    v1::LabeledExample e;
    e.mutable_input()->set_text_a(absl::StrCat("example ", i));
    e.set_label(i % 2);
    job.examples.push_back(e);
  }
  return job;
}

SchedulerOptions Options(SimulatedClock* clock, int masks_per_shard,
                         int examples_per_shard) {
  SchedulerOptions o;
  o.sharding = {masks_per_shard, examples_per_shard};
  o.clock = clock;
  o.max_inflight = 2;
  return o;
}

void ExpectSame(const SweepSummary& a, const SweepSummary& b) {
  ASSERT_EQ(a.masks.size(), b.masks.size());
  EXPECT_EQ(a.baseline.counts.correct, b.baseline.counts.correct);
  for (size_t i = 0; i < a.masks.size(); ++i) {
    EXPECT_EQ(a.masks[i].counts.mask_id, b.masks[i].counts.mask_id);
    EXPECT_EQ(a.masks[i].counts.correct, b.masks[i].counts.correct);
    EXPECT_EQ(a.masks[i].counts.loss_sum, b.masks[i].counts.loss_sum);
    EXPECT_EQ(a.masks[i].accuracy, b.masks[i].accuracy);
  }
}

SweepSummary SingleRun(const SweepJob& job) {
  SimulatedClock clock;
  testing::FakeExecutor exec(1);
  auto run = ScheduleSweep(job, &exec,
                           Options(&clock, static_cast<int>(job.masks.size()),
                                   static_cast<int>(job.examples.size())));
  EXPECT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(exec.total_calls(), 1);
  return run->summary;
}

TEST(SweepSchedulerTest, SurvivesADeadReplicaWithExactResults) {
  const SweepJob job = Job(20, 30);
  SimulatedClock clock;
  testing::FakeExecutor exec(3);
  exec.Kill(1);
  exec.SetDelay(absl::Milliseconds(2));
  int updates = 0;
  auto run = ScheduleSweep(job, &exec, Options(&clock, 3, 7),
                           [&](const SweepProgressSnapshot&) { ++updates; });
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSame(run->summary, SingleRun(job));
  EXPECT_EQ(run->shards_total, 7 * 5);
  EXPECT_EQ(run->channels[1].shards_ok, 0);
  EXPECT_GT(run->channels[1].failures, 0);
  EXPECT_GT(run->channels[0].shards_ok + run->channels[2].shards_ok, 0);
  EXPECT_GT(run->retries, 0);
  EXPECT_GT(updates, 0);
  EXPECT_GT(clock.total_slept(), absl::ZeroDuration());  // backoff happened
}

TEST(SweepSchedulerTest, EveryShardCarriesTheReferenceStatistics) {
  SweepJob job = Job(6, 8);
  job.mode = v1::ABLATION_MODE_RESAMPLE;
  job.statistics = "hs-0123456789abcdef";
  job.reference.emplace_back().set_text_a("a reference input");
  job.reference.emplace_back().set_text_a("another one");
  job.resample.set_draws(4);
  job.resample.set_seed(7);
  SimulatedClock clock;
  testing::FakeExecutor exec(2);
  auto run = ScheduleSweep(job, &exec, Options(&clock, 2, 3));
  ASSERT_TRUE(run.ok()) << run.status();
  const auto requests = exec.requests();
  ASSERT_EQ(requests.size(), 3u * 3u);  // 3 mask ranges x 3 example chunks
  for (const v1::SweepAblationRequest& r : requests) {
    EXPECT_EQ(r.mode(), v1::ABLATION_MODE_RESAMPLE);
    EXPECT_EQ(r.statistics(), "hs-0123456789abcdef");
    ASSERT_EQ(r.reference_size(), 2);
    EXPECT_EQ(r.reference(1).text_a(), "another one");
    EXPECT_EQ(r.resample().draws(), 4);
    EXPECT_EQ(r.resample().seed(), 7u);
  }
  // Other statistics score other numbers: not the same sweep.
  SweepJob other = job;
  other.resample.set_seed(8);
  EXPECT_NE(SweepFingerprint(job, {2, 3}), SweepFingerprint(other, {2, 3}));
  other = job;
  other.reference.pop_back();
  EXPECT_NE(SweepFingerprint(job, {2, 3}), SweepFingerprint(other, {2, 3}));
}

TEST(SweepSchedulerTest, FailsClearlyWhenNoReplicaAnswers) {
  SimulatedClock clock;
  testing::FakeExecutor exec(2);
  exec.Kill(0);
  exec.Kill(1);
  SchedulerOptions o = Options(&clock, 4, 4);
  o.max_attempts = 3;
  auto run = ScheduleSweep(Job(8, 8), &exec, o);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(run.status().message().find("no replica answered"),
            std::string::npos)
      << run.status();
  EXPECT_NE(run.status().message().find("attempt 3 on fake-"),
            std::string::npos)
      << run.status();
}

TEST(SweepSchedulerTest, DoesNotRetryARequestError) {
  SimulatedClock clock;
  testing::FakeExecutor exec(2);
  exec.FailAll(absl::InvalidArgumentError("examples[0].label=7 is outside"));
  auto run = ScheduleSweep(Job(8, 8), &exec, Options(&clock, 8, 8));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(exec.total_calls(), 1);
}

TEST(SweepSchedulerTest, ResumesFromTheProgressFile) {
  const SweepJob job = Job(12, 10);
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/progress-", getpid(), ".jsonl");
  std::remove(path.c_str());
  SimulatedClock clock;
  SchedulerOptions o = Options(&clock, 3, 5);  // 8 shards
  o.progress_file = path;
  o.max_attempts = 2;
  {
    testing::FakeExecutor exec(1);
    exec.FailAll(absl::UnavailableError("gone"), /*ok_calls=*/3);
    ASSERT_FALSE(ScheduleSweep(job, &exec, o).ok());
  }
  testing::FakeExecutor exec(2);
  auto run = ScheduleSweep(job, &exec, o);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->shards_resumed, 3);
  EXPECT_EQ(exec.total_calls(), 8 - 3);
  ExpectSame(run->summary, SingleRun(job));
  // A different sweep refuses the file.
  auto other = ScheduleSweep(Job(11, 10), &exec, o);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  std::remove(path.c_str());
}

TEST(SweepSchedulerTest, AProgressFileOfAnotherModelIdentityIsRefused) {
  SweepJob job = Job(6, 4);
  job.model_identity = "model.safetensors:sha256=aa;dtype=F32";
  const std::string path = absl::StrCat(
      ::testing::TempDir(), "/progress-identity-", getpid(), ".jsonl");
  std::remove(path.c_str());
  SimulatedClock clock;
  SchedulerOptions o = Options(&clock, 3, 2);
  o.progress_file = path;
  testing::FakeExecutor exec(1);
  ASSERT_TRUE(ScheduleSweep(job, &exec, o).ok());
  // The same flags against other weights (or a BF16 replica): the file's
  // results are not this sweep's.
  SweepJob other = job;
  other.model_identity = "model.safetensors:sha256=bb;dtype=F32";
  EXPECT_NE(SweepFingerprint(job, o.sharding),
            SweepFingerprint(other, o.sharding));
  auto refused = ScheduleSweep(other, &exec, o);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition)
      << refused.status();
  EXPECT_NE(refused.status().message().find(path), std::string::npos);
  // The identity it was written under still resumes it, running nothing.
  const int calls = exec.total_calls();
  auto resumed = ScheduleSweep(job, &exec, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(exec.total_calls(), calls);
  std::remove(path.c_str());
}

TEST(SweepSchedulerTest, AReplicaServingAnotherModelIsRefusedByAddress) {
  SweepJob job = Job(12, 10);
  job.model_identity = "model.safetensors:sha256=aa;dtype=F32;server=1";
  SimulatedClock clock;
  testing::FakeExecutor exec(3);
  exec.ServeIdentity(0, job.model_identity);
  exec.ServeIdentity(1, "model.safetensors:sha256=bb;dtype=F32;server=1");
  exec.ServeIdentity(2, job.model_identity);
  // The other replicas answer only once fake-1 has been asked, so fake-1
  // is asked (and refuses) whatever the threads' timing.
  exec.HoldUntilCalled(1);
  auto run = ScheduleSweep(job, &exec, Options(&clock, 3, 2));
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSame(run->summary, SingleRun(job));
  // Every request said which model it was planned against.
  for (const auto& r : exec.requests()) {
    EXPECT_EQ(r.model_identity(), job.model_identity);
  }
  // fake-1 refused the shards its two in-flight slots took and got no
  // other; its refusal is in the report.
  EXPECT_GE(exec.calls(1), 1);
  EXPECT_LE(exec.calls(1), 2);
  EXPECT_EQ(run->shards_by_peer.count("fake-1"), 0u);
  int refused = 0;
  for (const ChannelStats& c : run->channels) {
    if (c.name != "fake-1") {
      EXPECT_EQ(c.refused, "") << c.name;
      continue;
    }
    ++refused;
    EXPECT_NE(c.refused.find("model identity mismatch"), std::string::npos)
        << c.refused;
    EXPECT_NE(c.refused.find("sha256=bb"), std::string::npos);
  }
  EXPECT_EQ(refused, 1);
}

TEST(SweepSchedulerTest, EveryReplicaServingAnotherModelStopsTheSweep) {
  SweepJob job = Job(6, 4);
  job.model_identity = "model.safetensors:sha256=aa;dtype=F32;server=1";
  SimulatedClock clock;
  testing::FakeExecutor exec(2);
  exec.ServeIdentity(0, "model.safetensors:sha256=bb;dtype=F32;server=1");
  exec.ServeIdentity(1, "model.safetensors:sha256=cc;dtype=F32;server=1");
  auto run = ScheduleSweep(job, &exec, Options(&clock, 3, 2));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(run.status().message().find("fake-0"), std::string::npos)
      << run.status();
  EXPECT_NE(run.status().message().find("fake-1"), std::string::npos);
  EXPECT_NE(run.status().message().find("sha256=cc"), std::string::npos);
  EXPECT_LE(exec.total_calls(), 4);  // two in-flight slots per replica
}

TEST(SweepSchedulerTest, ACutStreamResumesItsRemainingMasks) {
  const SweepJob job = Job(12, 10);
  SimulatedClock clock;
  testing::FakeExecutor exec(1);
  exec.CutAfter(2);  // every call ends after 2 mask results
  SchedulerOptions o = Options(&clock, 6, 10);  // 2 shards of 6 masks
  o.max_attempts = 1;  // calls that made progress are not failed attempts
  auto run = ScheduleSweep(job, &exec, o);
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSame(run->summary, SingleRun(job));
  // Per shard: 6 masks sent (2 kept), then 4 (2 kept), then 2 (done). A
  // restart from scratch would send 6 every time and never finish.
  EXPECT_EQ(exec.total_calls(), 6);
  EXPECT_EQ(exec.masks_sent(), 2 * (6 + 4 + 2));
  EXPECT_EQ(run->masks_resumed, 2 * 4);
  EXPECT_EQ(run->channels[0].failures, 0);
}

TEST(SweepSchedulerTest, ACallEndingBadlyAfterItsLastResultIsComplete) {
  // A replica that streams every result and then misses its deadline (seen
  // with a stalled replica): the shard is done, not sent again with no
  // masks (which a replica refuses as INVALID_ARGUMENT).
  const SweepJob job = Job(12, 10);
  SimulatedClock clock;
  testing::FakeExecutor exec(1);
  exec.EndWith(absl::DeadlineExceededError("fake: deadline after the end"));
  SchedulerOptions o = Options(&clock, 6, 10);  // 2 shards of 6 masks
  o.max_attempts = 1;
  auto run = ScheduleSweep(job, &exec, o);
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSame(run->summary, SingleRun(job));
  EXPECT_EQ(exec.total_calls(), 2);
  for (const v1::SweepAblationRequest& r : exec.requests()) {
    EXPECT_GT(r.masks_size(), 0);
  }
}

TEST(SweepSchedulerTest, FollowsReplicasThatComeAndGo) {
  const SweepJob job = Job(40, 4);
  SimulatedClock clock;
  testing::FakeExecutor exec(3);
  exec.SetLive({0});
  exec.SetDelay(absl::Milliseconds(20));
  SchedulerOptions o = Options(&clock, 1, 4);  // 40 shards
  o.max_inflight = 1;
  o.refresh_interval = absl::ZeroDuration();  // re-read at every wake-up
  absl::StatusOr<SweepReport> run;
  std::thread sweep([&] { run = ScheduleSweep(job, &exec, o); });
  while (exec.calls(0) < 3) absl::SleepFor(absl::Milliseconds(5));
  exec.SetLive({1, 2});  // replica 0 goes, two new ones come
  const int calls_on_0 = exec.calls(0);
  sweep.join();
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSame(run->summary, SingleRun(job));
  EXPECT_GT(exec.calls(1), 0);
  EXPECT_GT(exec.calls(2), 0);
  EXPECT_LE(exec.calls(0), calls_on_0 + 1);  // at most the one in flight
  EXPECT_EQ(run->channels.size(), 3u);
}

TEST(SweepSchedulerTest, FailsWhenNoReplicaAppears) {
  SimulatedClock clock;
  testing::FakeExecutor exec(1);
  exec.SetLive({});
  SchedulerOptions o = Options(&clock, 4, 4);
  o.no_replica_timeout = absl::Seconds(30);
  auto run = ScheduleSweep(Job(4, 4), &exec, o);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(run.status().message().find("fake: no channel"), std::string::npos)
      << run.status();
  EXPECT_GE(clock.total_slept(), absl::Seconds(30));
}

TEST(SweepSchedulerTest, PartsMergeExactlyAndAMissingPartIsRun) {
  const SweepJob job = Job(12, 10);
  const std::string dir = ::testing::TempDir();
  std::vector<std::string> parts;
  SimulatedClock clock;
  SchedulerOptions o = Options(&clock, 3, 5);  // 8 shards
  o.part_count = 3;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(absl::StrCat(dir, "/part-", getpid(), "-", i, ".jsonl"));
    std::remove(parts.back().c_str());
    o.part_index = i;
    o.progress_file = parts.back();
    testing::FakeExecutor exec(1);
    auto run = ScheduleSweep(job, &exec, o);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_FALSE(run->complete);
    EXPECT_EQ(run->shards_total, i < 2 ? 3 : 2);  // shards 0,3,6 / 1,4,7 / 2,5
    EXPECT_EQ(exec.total_calls(), run->shards_total);
  }
  SchedulerOptions merge = Options(&clock, 3, 5);
  merge.merge_from = parts;
  {
    testing::FakeExecutor exec(1);
    auto run = ScheduleSweep(job, &exec, merge);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->complete);
    EXPECT_EQ(exec.total_calls(), 0);
    EXPECT_EQ(run->shards_resumed, 8);
    ExpectSame(run->summary, SingleRun(job));
  }
  merge.merge_from = {parts[0], parts[2]};  // part 1 lost
  {
    testing::FakeExecutor exec(1);
    auto run = ScheduleSweep(job, &exec, merge);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(exec.total_calls(), 3);
    ExpectSame(run->summary, SingleRun(job));
  }
  // A part of another sweep is refused, naming the file.
  merge.merge_from = {parts[0]};
  testing::FakeExecutor exec(1);
  auto other = ScheduleSweep(Job(11, 10), &exec, merge);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find(parts[0]), std::string::npos);
  for (const std::string& p : parts) std::remove(p.c_str());
}

TEST(SweepSchedulerTest, BackoffGrowsToTheCap) {
  SchedulerOptions o;
  o.initial_backoff = absl::Milliseconds(100);
  o.max_backoff = absl::Milliseconds(500);
  EXPECT_EQ(Backoff(o, 1), absl::Milliseconds(100));
  EXPECT_EQ(Backoff(o, 2), absl::Milliseconds(200));
  EXPECT_EQ(Backoff(o, 10), absl::Milliseconds(500));
}

}  // namespace
}  // namespace client
}  // namespace bertology
