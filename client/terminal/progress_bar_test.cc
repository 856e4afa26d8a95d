// The progress bar's line: bar, percentage, ETA and shards.
#include "client/terminal/progress_bar.h"

#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

TEST(ProgressBarTest, ShowsRateAndEta) {
  SweepProgressSnapshot s;
  s.pairs_done = 50;
  s.pairs_total = 200;
  s.shards_done = 1;
  s.shards_total = 4;
  const std::string line = ProgressBar::Line(s, 10.0, 10);
  EXPECT_NE(line.find("[##........]"), std::string::npos) << line;
  EXPECT_NE(line.find("25.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:15"), std::string::npos) << line;
  EXPECT_NE(line.find("shards 1/4"), std::string::npos) << line;
}

}  // namespace
}  // namespace client
}  // namespace bertology
