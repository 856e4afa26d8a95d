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

TEST(ArgsTest, RefusesUnknownAndMalformedFlags) {
  EXPECT_FALSE(Args::Parse({"--nope"}, kFlags).ok());
  EXPECT_FALSE(Args::Parse({"--text-a"}, kFlags).ok());
  EXPECT_FALSE(Args::Parse({"--heads=1"}, kFlags).ok());
  auto args = Args::Parse({"--text-a=x"}, kFlags);
  EXPECT_FALSE(args->GetInt("text-a", 0).ok());
  EXPECT_EQ(*args->GetInt("missing", 7), 7);
}

}  // namespace
}  // namespace client
}  // namespace bertology
