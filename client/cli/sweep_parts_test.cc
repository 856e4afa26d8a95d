#include "client/cli/sweep_parts.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

TEST(SweepPartsTest, ParsesPart) {
  auto p = ParsePart("2/4");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->first, 2);
  EXPECT_EQ(p->second, 4);
  for (const char* bad : {"4/4", "-1/4", "1", "a/b", "1/0", "1/2/3", ""}) {
    auto s = ParsePart(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("--part="), std::string::npos);
  }
}

TEST(SweepPartsTest, ExpandsGlobsInOrder) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/parts-", getpid());
  ASSERT_EQ(system(absl::StrCat("mkdir -p ", dir).c_str()), 0);
  for (const char* name : {"part-1.jsonl", "part-0.jsonl", "other.txt"}) {
    std::ofstream(absl::StrCat(dir, "/", name)) << "x\n";
  }
  auto files = ExpandMergeFrom({absl::StrCat(dir, "/part-*.jsonl")});
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0], absl::StrCat(dir, "/part-0.jsonl"));
  EXPECT_EQ((*files)[1], absl::StrCat(dir, "/part-1.jsonl"));
  auto none = ExpandMergeFrom({absl::StrCat(dir, "/nothing-*")});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  ASSERT_EQ(system(absl::StrCat("rm -rf ", dir).c_str()), 0);
}

}  // namespace
}  // namespace client
}  // namespace bertology
