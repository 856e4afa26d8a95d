#include "client/cli/labeled_data.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

const std::vector<std::string> kLabels = {"negative", "positive"};

TEST(LabelsTest, MapsNamesIndicesAndMaps) {
  EXPECT_EQ(*MapLabel("positive", {}, kLabels), 1);
  EXPECT_EQ(*MapLabel("NEGATIVE", {}, kLabels), 0);
  EXPECT_EQ(*MapLabel("1", {}, kLabels), 1);
  EXPECT_FALSE(MapLabel("2", {}, kLabels).ok());
  auto map = ParseLabelMap("neg=0,pos=positive", kLabels);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(*MapLabel("pos", *map, kLabels), 1);
  EXPECT_FALSE(MapLabel("positive", *map, kLabels).ok());
  EXPECT_FALSE(ParseLabelMap("neg=5", kLabels).ok());
  EXPECT_FALSE(ParseLabelMap("neg", kLabels).ok());
}

TEST(LoadLabeledDataTest, ReadsColumnsAndNamesTheBadLine) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/data-", getpid(), ".tsv");
  {
    std::ofstream out(path);
    out << "s1\ts2\tlabel\nhello\tworld\tpos\nbye\tnow\tneg\nx\ty\tmaybe\n";
  }
  auto args =
      Args::Parse({"--data", path, "--text-a=s1", "--text-b=s2",
                   "--label=label", "--label-map=neg=0,pos=1", "--limit=2"},
                  DatasetFlags());
  ASSERT_TRUE(args.ok());
  auto data = LoadLabeledData(*args, kLabels, true);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->examples.size(), 2u);
  EXPECT_EQ(data->examples[0].input().text_b(), "world");
  EXPECT_EQ(data->examples[0].label(), 1);
  auto all = Args::Parse({"--data", path, "--text-a=s1", "--text-b=s2",
                          "--label=label", "--label-map=neg=0,pos=1"},
                         DatasetFlags());
  auto bad = LoadLabeledData(*all, kLabels, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":4:"), std::string::npos)
      << bad.status();
  std::remove(path.c_str());
}

TEST(LoadTextInputsTest, ReadsTheInputsAndIgnoresLabels) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/reference-", getpid(), ".tsv");
  {
    std::ofstream out(path);
    // A label no model knows: a reference set's labels are not read.
    out << "s1\ts2\tlabel\nhello\tworld\tmaybe\nbye\tnow\t???\n";
  }
  auto args = Args::Parse({"--data=other.tsv", "--text-a=s2", "--text-b="},
                          DatasetFlags());
  ASSERT_TRUE(args.ok());
  auto inputs = LoadTextInputs(path, *args, /*column_flags=*/true);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_EQ(inputs->size(), 2u);
  EXPECT_EQ((*inputs)[0].text_a(), "world");
  EXPECT_EQ((*inputs)[0].text_b(), "");
  // Without the column flags (--text-a is a text): columns 0 and 1, no
  // header.
  auto defaults = LoadTextInputs(path, *args, /*column_flags=*/false);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  ASSERT_EQ(defaults->size(), 3u);
  EXPECT_EQ((*defaults)[1].text_a(), "hello");
  EXPECT_EQ((*defaults)[1].text_b(), "world");
  EXPECT_FALSE(
      LoadTextInputs(path + ".missing", *args, /*column_flags=*/false).ok());
  std::remove(path.c_str());
}

TEST(CommandInputsTest, ReadsDataOrOneTextAndSaysWhichExitCode) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/inputs-", getpid(), ".tsv");
  {
    std::ofstream out(path);
    out << "hello\tworld\nbye\tnow\n";
  }
  auto data = Args::Parse({"--data", path, "--label="}, DatasetFlags());
  ASSERT_TRUE(data.ok());
  auto inputs = CommandInputs(*data, {});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_EQ(inputs->size(), 2u);
  EXPECT_EQ((*inputs)[1].text_b(), "now");

  auto texts = Args::Parse({"a text", "another"}, DatasetFlags());
  ASSERT_TRUE(texts.ok());
  inputs = CommandInputs(*texts, {});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_EQ(inputs->size(), 1u);
  EXPECT_EQ((*inputs)[0].text_a(), "a text");
  EXPECT_EQ((*inputs)[0].text_b(), "another");

  auto none = Args::Parse({}, DatasetFlags());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(ExitCodeOf(CommandInputs(*none, {}).status()), kExitUsage);

  // A flag error is usage (2), a bad file is data (3).
  auto bad_flag = Args::Parse({"--data", path, "--format=xml"}, DatasetFlags());
  ASSERT_TRUE(bad_flag.ok());
  EXPECT_EQ(ExitCodeOf(CommandInputs(*bad_flag, {}).status()), kExitUsage);
  auto missing =
      Args::Parse({"--data", path + ".missing", "--label="}, DatasetFlags());
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(ExitCodeOf(CommandInputs(*missing, {}).status()), kExitData);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace client
}  // namespace bertology
