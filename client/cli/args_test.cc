#include "client/cli/args.h"

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"text-a", true, ""}, {"heads", false, ""}, {"random", true, ""}};

TEST(ArgsTest, ParsesDashedNamesValuesAndRepeats) {
  auto args = Args::Parse({"--text-a", "a b", "--heads", "--random=0.1,2",
                           "--random=0.2", "pos", "--", "--not-a-flag"},
                          kFlags);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Get("text-a"), "a b");
  EXPECT_TRUE(args->Has("heads"));
  EXPECT_EQ(args->Get("random"), "0.2");
  EXPECT_EQ(args->GetAll("random").size(), 2u);
  EXPECT_EQ(args->positional(),
            (std::vector<std::string>{"pos", "--not-a-flag"}));
}

TEST(ArgsTest, OneValuePerOccurrence) {
  auto args =
      Args::Parse({"--random", "0.1", "text", "--random", "0.2"}, kFlags);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->GetAll("random"), (std::vector<std::string>{"0.1", "0.2"}));
  EXPECT_EQ(args->positional(), (std::vector<std::string>{"text"}));
  EXPECT_FALSE(args->Has("heads"));
  EXPECT_FALSE(args->Has("text-a"));
  // A value may start with a dash; after "--" anything is positional.
  args = Args::Parse({"--text-a", "-x", "--", "-y"}, kFlags);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Get("text-a"), "-x");
  EXPECT_EQ(args->positional(), (std::vector<std::string>{"-y"}));
  // An empty value is a value (--text-b= : no second text column).
  args = Args::Parse({"--text-a=", "--random", ""}, kFlags);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->Has("text-a"));
  EXPECT_EQ(args->Get("text-a", "default"), "");
  EXPECT_EQ(args->Get("random", "default"), "");
}

TEST(ArgsTest, RefusesUnknownAndMalformedFlags) {
  EXPECT_EQ(Args::Parse({"--nope"}, kFlags).status().message(),
            "unknown flag --nope (see --help)");
  EXPECT_EQ(Args::Parse({"--nope=3"}, kFlags).status().message(),
            "unknown flag --nope (see --help)");
  EXPECT_EQ(Args::Parse({"-n"}, kFlags).status().message(),
            "unknown flag -n (see --help)");
  EXPECT_EQ(Args::Parse({"--text-a"}, kFlags).status().message(),
            "--text-a needs a value");
  EXPECT_EQ(Args::Parse({"--heads=1"}, kFlags).status().message(),
            "--heads takes no value");
  auto args = Args::Parse({"--text-a=x"}, kFlags);
  EXPECT_FALSE(args->GetInt("text-a", 0).ok());
  EXPECT_EQ(*args->GetInt("missing", 7), 7);
}

}  // namespace
}  // namespace client
}  // namespace bertology
