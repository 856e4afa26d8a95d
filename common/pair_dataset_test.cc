#include "common/pair_dataset.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace {

std::string WriteTemp(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(PairDatasetTest, TsvByIndexWithoutHeader) {
  auto path = WriteTemp("a.tsv", "q1\tt1\t4\nq2\tt2\t0\n\n");
  auto rows = ReadPairDataset(path, {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].text_a, "q2");
  EXPECT_EQ((*rows)[1].text_b, "t2");
  EXPECT_EQ((*rows)[1].label, "0");
  EXPECT_EQ((*rows)[1].line, 2);
}

TEST(PairDatasetTest, GlueTsvByNameWithHeader) {
  auto path =
      WriteTemp("glue.tsv", "label\tid\tsentence\nyes\t7\tgood film\r\n");
  PairDatasetOptions o;
  o.text_a = "sentence";
  o.text_b = "";
  o.label = "label";
  auto rows = ReadPairDataset(path, o);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].text_a, "good film");
  EXPECT_EQ((*rows)[0].text_b, "");
  EXPECT_EQ((*rows)[0].label, "yes");
}

TEST(PairDatasetTest, CsvQuoting) {
  auto path = WriteTemp("a.csv", "a,b,y\n\"x, \"\"y\"\"\",z,1\n");
  PairDatasetOptions o;
  o.text_a = "a";
  o.text_b = "b";
  o.label = "y";
  auto rows = ReadPairDataset(path, o);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].text_a, "x, \"y\"");
}

TEST(PairDatasetTest, JsonlFields) {
  auto path = WriteTemp("a.jsonl", "{\"q\":\"a\",\"t\":\"b\",\"y\":3}\n");
  PairDatasetOptions o;
  o.text_a = "q";
  o.text_b = "t";
  o.label = "y";
  auto rows = ReadPairDataset(path, o);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].label, "3");
}

TEST(PairDatasetTest, BadRowNamesItsLine) {
  auto path = WriteTemp("bad.tsv", "q\tt\t1\nonly-one-column\n");
  auto rows = ReadPairDataset(path, {});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("bad.tsv:2"), std::string::npos)
      << rows.status();
}

TEST(PairDatasetTest, BadJsonNamesItsLine) {
  auto path = WriteTemp("bad.jsonl", "{\"0\":\"a\"}\n{nope\n");
  PairDatasetOptions o;
  o.text_b = "";
  o.label = "";
  auto rows = ReadPairDataset(path, o);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("bad.jsonl:2"), std::string::npos)
      << rows.status();
}

TEST(PairDatasetTest, UnknownColumnNameListsHeader) {
  auto path = WriteTemp("h.tsv", "a\tb\n1\t2\n");
  PairDatasetOptions o;
  o.text_a = "sentence";
  o.text_b = "";
  o.label = "";
  auto rows = ReadPairDataset(path, o);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("'sentence'"), std::string::npos);
}

TEST(PairDatasetTest, MissingFile) {
  auto rows = ReadPairDataset("/nonexistent/x.tsv", {});
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace bertology
