#include "server/core/process/threading.h"

#include <sched.h>

#include <thread>

#include "gtest/gtest.h"

namespace bertology {
namespace {

// UsableCpus follows the affinity mask (of the calling thread, which is
// what a process started under `taskset` or a cpuset gives every thread).
TEST(UsableCpusTest, FollowsTheAffinityMask) {
  const int all = UsableCpus();
  EXPECT_GE(all, 1);
  EXPECT_LE(all, static_cast<int>(std::thread::hardware_concurrency()));
  int one = 0;
  std::thread([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
    one = UsableCpus();
  }).join();
  EXPECT_EQ(one, 1);
}

TEST(UsableCpusTest, CgroupQuotaRoundsUp) {
  EXPECT_EQ(CapByCpuQuota(8, "max 100000"), 8);
  EXPECT_EQ(CapByCpuQuota(8, "150000 100000"), 2);
  EXPECT_EQ(CapByCpuQuota(8, "50000 100000"), 1);
  EXPECT_EQ(CapByCpuQuota(8, "400000 100000"), 4);
  EXPECT_EQ(CapByCpuQuota(2, "400000 100000"), 2);  // never more than given
  EXPECT_EQ(CapByCpuQuota(8, ""), 8);
  EXPECT_EQ(CapByCpuQuota(8, "12x 100000"), 8);
  EXPECT_EQ(CapByCpuQuota(8, "100000 0"), 8);
}

}  // namespace
}  // namespace bertology
