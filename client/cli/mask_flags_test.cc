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

TEST(MaskFlagsTest, MeanAndResampleTakeReferenceStatistics) {
  auto args = Args::Parse(
      {"--ablate=1:2", "--mode=resample", "--statistics=hs-00000000000000ff",
       "--draws=8", "--seed=42"},
      HeadMaskFlags());
  ASSERT_TRUE(args.ok()) << args.status();
  auto mask = ParseHeadMask(*args);
  ASSERT_TRUE(mask.ok()) << mask.status();
  EXPECT_EQ(mask->mode(), v1::ABLATION_MODE_RESAMPLE);
  EXPECT_EQ(mask->statistics(), "hs-00000000000000ff");
  EXPECT_EQ(mask->resample().draws(), 8);
  EXPECT_EQ(mask->resample().seed(), 42u);
  EXPECT_EQ(ModeName(mask->mode()), "resample");

  auto mean =
      Args::Parse({"--mode=mean", "--reference=ref.tsv"}, HeadMaskFlags());
  auto mean_mask = ParseHeadMask(*mean);
  ASSERT_TRUE(mean_mask.ok()) << mean_mask.status();
  EXPECT_EQ(mean_mask->mode(), v1::ABLATION_MODE_MEAN);
  EXPECT_FALSE(mean_mask->has_resample());
  EXPECT_EQ(mean_mask->statistics(), "");  // the reference's id comes later
}

TEST(MaskFlagsTest, RefusesReferenceFlagsThatWouldBeIgnored) {
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"--mode=mean"},  // nothing to read
           {"--mode=mean", "--statistics=a", "--reference=b"},
           {"--mode=mean", "--statistics=a", "--draws=2"},
           {"--mode=resample", "--statistics=a", "--draws=65"},
           {"--mode=resample", "--statistics=a", "--seed=-1"},
           {"--mode=zero", "--statistics=a"},
           {"--reference=b"},
       }) {
    auto args = Args::Parse(bad, HeadMaskFlags());
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_FALSE(ParseHeadMask(*args).ok()) << bad[0] << " " << bad.back();
  }
  auto sweep = Args::Parse(
      {"--heads", "--mode=resample", "--reference=r.tsv", "--draws=3"},
      SweepSpecFlags());
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  EXPECT_TRUE(CheckReferenceFlags(*sweep, *ParseMode(*sweep)).ok());
}

}  // namespace
}  // namespace client
}  // namespace bertology
