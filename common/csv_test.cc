#include "common/csv.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(CsvFieldTest, PlainTextIsUnchanged) {
  EXPECT_EQ(CsvField("head-L0H1"), "head-L0H1");
  EXPECT_EQ(CsvField(""), "");
}

TEST(CsvFieldTest, QuotesCommasQuotesAndLineBreaks) {
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  // A bare CR ends a record for many readers: it is quoted too.
  EXPECT_EQ(CsvField("cr\rhere"), "\"cr\rhere\"");
}

TEST(CsvNumberTest, RoundTripsAndMarksMissing) {
  const double x = 0.1 + 0.2;
  EXPECT_EQ(std::strtod(CsvNumber(x).c_str(), nullptr), x);
  EXPECT_EQ(CsvNumber(0.25), "0.25");
  EXPECT_EQ(CsvNumber(std::nan("")), "");
  EXPECT_EQ(CsvNumber(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(CsvNumber(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace bertology
