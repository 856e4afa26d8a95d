// Expected values solve Wilson's quadratic (p - x/n)^2 = z^2 p (1 - p) / n
// directly, and the paired interval is the textbook mean +- z * sd / sqrt(k)
// of the differences (sample sd) with a +1 and a -1 appended (Bonett &
// Price), both computed by hand in Python.
#include "common/intervals.h"

#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(WilsonIntervalTest, MatchesTheQuadraticsRoots) {
  Interval a = WilsonInterval(4, 1000);
  EXPECT_NEAR(a.low, 0.0015565881404084293, 1e-12);
  EXPECT_NEAR(a.high, 0.010239556277262255, 1e-12);
  Interval b = WilsonInterval(81, 263);
  EXPECT_NEAR(b.low, 0.2552885198782743, 1e-12);
  EXPECT_NEAR(b.high, 0.3662095769828, 1e-12);
  // The edges stay inside [0, 1] and are not degenerate (Wald's would be
  // [0, 0] at 0 successes).
  Interval c = WilsonInterval(0, 50);
  EXPECT_NEAR(c.low, 0.0, 1e-15);
  EXPECT_NEAR(c.high, 0.07134759913335872, 1e-12);
  Interval d = WilsonInterval(50, 50);
  EXPECT_NEAR(d.low, 0.9286524008666398, 1e-12);
  EXPECT_EQ(d.high, 1.0);
}

TEST(PairedDeltaIntervalTest, IsTheMeanDifferencesNormalInterval) {
  PairedSums s;
  for (int d : {1, 0, 0, -1, 0, 1, 1, 0, 0, 0}) s.Add(1, d);
  auto ci = PairedDeltaInterval(s);
  ASSERT_TRUE(ci.has_value());
  EXPECT_NEAR(ci->low, -0.23942582401666804, 1e-12);
  EXPECT_NEAR(ci->high, 0.5727591573500014, 1e-12);
  EXPECT_FALSE(ci->ExcludesZero());
}

TEST(PairedDeltaIntervalTest, FewChangedExamplesAreNotEnough) {
  // 4 of 1,000 gained, none lost: McNemar's exact p = 0.125, so no
  // evidence of a change (the unadjusted Wald interval, [+0.0001,
  // +0.0079], would say there is); 8 to 0 (p = 0.008) is one.
  PairedSums four, eight;
  for (int i = 0; i < 1000; ++i) {
    four.Add(1, i < 4 ? 1 : 0);
    eight.Add(1, i < 8 ? 1 : 0);
  }
  auto a = PairedDeltaInterval(four), b = PairedDeltaInterval(eight);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(a->low, -0.0007953226031410139, 1e-12);
  EXPECT_NEAR(a->high, 0.008779354539268758, 1e-12);
  EXPECT_FALSE(a->ExcludesZero());
  EXPECT_NEAR(b->low, 0.0018151597130861867, 1e-12);
  EXPECT_NEAR(b->high, 0.0141529041591693, 1e-12);
  EXPECT_TRUE(b->ExcludesZero());
}

TEST(PairedDeltaIntervalTest, SumsAddAcrossChunks) {
  PairedSums all, a, b;
  const std::vector<std::pair<double, double>> rows = {
      {3, -1}, {2, 0}, {5, -2}, {1, -1}, {4, -3}, {2, 0.5}};
  for (size_t i = 0; i < rows.size(); ++i) {
    all.Add(rows[i].first, rows[i].second);
    (i < 2 ? a : b).Add(rows[i].first, rows[i].second);
  }
  a.Add(b);
  auto x = PairedDeltaInterval(all), y = PairedDeltaInterval(a);
  ASSERT_TRUE(x && y);
  EXPECT_DOUBLE_EQ(x->low, y->low);
  EXPECT_DOUBLE_EQ(x->high, y->high);
  EXPECT_TRUE(x->ExcludesZero());  // every example lost units but one
}

TEST(PairedDeltaIntervalTest, NeedsTwoExamples) {
  PairedSums s;
  EXPECT_FALSE(PairedDeltaInterval(s).has_value());
  s.Add(1, 1);
  EXPECT_FALSE(PairedDeltaInterval(s).has_value());
  s.Add(1, 1);
  auto ci = PairedDeltaInterval(s);
  ASSERT_TRUE(ci.has_value());
  // Two gained of two: the pseudo-examples give it a width.
  EXPECT_LT(ci->low, ci->high);
  EXPECT_FALSE((Interval{0, 0}.ExcludesZero()));
}

}  // namespace
}  // namespace bertology
