#include "client/cli/mask_flags.h"

#include "gtest/gtest.h"

namespace bertology {
namespace client {
namespace {

TEST(MaskFlagsTest, SweepSpecsFromFlags) {
  auto args = Args::Parse({"--heads", "--layers", "--random=0.25,10,3,0-5",
                           "--keep-only=0-5:2:3,4:1", "--mask=1:1"},
                          SweepSpecFlags());
  ASSERT_TRUE(args.ok()) << args.status();
  auto specs = ParseSweepSpecs(*args);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 5u);
  EXPECT_TRUE((*specs)[0].has_explicit_mask());
  EXPECT_TRUE((*specs)[1].has_all_single_heads());
  const auto& r = (*specs)[3].random();
  EXPECT_EQ(r.repeats(), 10);
  EXPECT_EQ(r.seed(), 3u);
  EXPECT_EQ(r.layer_end(), 6);  // inclusive on the command line
  const auto& k = (*specs)[4].keep_only();
  EXPECT_EQ(k.layer_end(), 6);
  ASSERT_EQ(k.keep_size(), 2);
  EXPECT_EQ(k.keep(1).layer(), 4);
}

TEST(MaskFlagsTest, RefusesBadSpecs) {
  for (const char* bad : {"--random=x", "--keep-only=5-2", "--mask=1-2"}) {
    auto args = Args::Parse({bad}, SweepSpecFlags());
    ASSERT_TRUE(args.ok());
    EXPECT_FALSE(ParseSweepSpecs(*args).ok()) << bad;
  }
  auto none = Args::Parse({}, SweepSpecFlags());
  EXPECT_FALSE(ParseSweepSpecs(*none).ok());
  auto mode = Args::Parse({"--mode=half"}, SweepSpecFlags());
  EXPECT_FALSE(ParseMode(*mode).ok());
}

}  // namespace
}  // namespace client
}  // namespace bertology
