// Expected values solve Wilson's quadratic (p - x/n)^2 = z^2 p (1 - p) / n
// directly, and the paired interval is the textbook mean +- z * sd / sqrt(k)
// of the differences (sample sd), both computed by hand in Python.
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
  EXPECT_NEAR(ci->low, -0.1919927969080108, 1e-12);
  EXPECT_NEAR(ci->high, 0.5919927969080108, 1e-12);
  EXPECT_FALSE(ci->ExcludesZero());
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
  EXPECT_DOUBLE_EQ(ci->low, 1.0);  // no spread: a point
  EXPECT_FALSE((Interval{0, 0}.ExcludesZero()));
}

}  // namespace
}  // namespace bertology
