#include "client/scheduler/progress_log.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

ShardResult Result(int index) {
  ShardResult r;
  r.shard = {index, 0, 1, index * 2, index * 2 + 2};
  r.replica = "ipv4:127.0.0.1:1";
  r.baseline = {-1, "baseline", "no mask", {}, 2, 5, 1, 0.1};
  r.masks.push_back({0, "head-L0H1", "ablate", {{0, 1}}, 2, 5, 2, 1.0 / 3.0});
  return r;
}

TEST(ProgressLogTest, RoundTripsExactly) {
  const ShardResult r = Result(1);
  auto back = ShardResultFromJson(ShardResultToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shard.Key(), r.shard.Key());
  EXPECT_EQ(back->masks[0].loss_sum, 1.0 / 3.0);
  EXPECT_EQ(back->masks[0].ablated, r.masks[0].ablated);
  EXPECT_EQ(back->baseline.correct, 1);
  EXPECT_EQ(back->baseline.scored, 5);  // token classifiers score words
  EXPECT_EQ(back->masks[0].scored, 5);
}

TEST(ProgressLogTest, ResumesIgnoringATornLastLine) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/log-", getpid(), ".jsonl");
  std::remove(path.c_str());
  {
    auto log = ProgressLog::Open(path, "sweep-a");
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_TRUE((*log)->finished().empty());
    ASSERT_TRUE((*log)->Append(Result(0)).ok());
    ASSERT_TRUE((*log)->Append(Result(1)).ok());
  }
  {
    std::ofstream torn(path, std::ios::app);
    torn << "{\"shard\":\"m0-1:e4";  // the pod died mid-write
  }
  {
    auto log = ProgressLog::Open(path, "sweep-a");
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_EQ((*log)->finished().size(), 2u);
    ASSERT_TRUE((*log)->Append(Result(2)).ok());
  }
  auto log = ProgressLog::Open(path, "sweep-a");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ((*log)->finished().size(), 3u);  // the torn line is skipped
  auto other = ProgressLog::Open(path, "sweep-b");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  std::remove(path.c_str());
}

TEST(ProgressLogTest, CreatesTheFoldersOfANewPath) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/fresh-volume-", getpid());
  std::filesystem::remove_all(dir);
  const std::string path = dir + "/run/nested/part-0.progress.jsonl";
  auto log = ProgressLog::Open(path, "fp");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Result(1)).ok());
  log->reset();
  auto read = ReadProgressFile(path, "fp");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(ProgressLogTest, NamesTheFolderItCannotCreate) {
  // A regular file where a folder of the path should be.
  const std::string file =
      absl::StrCat(::testing::TempDir(), "/not-a-folder-", getpid());
  std::ofstream(file) << "x";
  auto log = ProgressLog::Open(file + "/run/part-0.progress.jsonl", "fp");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find(
                "cannot create the progress file's folder " + file + "/run"),
            std::string::npos)
      << log.status();
  std::remove(file.c_str());
}

}  // namespace
}  // namespace client
}  // namespace bertology
