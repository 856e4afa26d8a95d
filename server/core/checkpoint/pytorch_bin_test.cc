// ReadPytorchBin against files written by real torch.save: the fixtures come
// from tests/fixtures/make_checkpoint_fixtures.py, run here into a temp dir.
#include "server/core/checkpoint/pytorch_bin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/core/checkpoint/checkpoint_fixtures_for_tests.h"
#include "server/core/checkpoint/state_dict.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

class PytorchBinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dir_ = MakeCheckpointFixtures(&why);
    if (dir_.empty()) GTEST_SKIP() << why;
  }
  std::string dir_;
};

class PytorchBinDtypeTest : public PytorchBinTest,
                            public ::testing::WithParamInterface<const char*> {
};

TEST_P(PytorchBinDtypeTest, EqualsSafetensorsOfSameWeights) {
  const std::string tag = GetParam();
  auto bin = ReadPytorchBin(dir_ + "/bin_" + tag + "/pytorch_model.bin");
  auto st = ReadSafetensors(dir_ + "/st_" + tag + "/model.safetensors");
  ASSERT_TRUE(bin.ok()) << bin.status();
  ASSERT_TRUE(st.ok()) << st.status();
  // The .bin has one extra non-tensor entry ("step"), which is skipped.
  EXPECT_EQ(bin->count("step"), 0u);
  ASSERT_EQ(bin->size(), st->size());
  for (const auto& [key, want] : *st) {
    ASSERT_EQ(bin->count(key), 1u) << key;
    const torch::Tensor& got = bin->at(key);
    EXPECT_EQ(got.scalar_type(), want.scalar_type()) << key;
    EXPECT_TRUE(torch::equal(got, want)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PytorchBinDtypeTest,
                         ::testing::Values("f32", "f16", "bf16"));

TEST_F(PytorchBinTest, SharedStorageAndOffset) {
  auto bin = ReadPytorchBin(dir_ + "/bin_shared/pytorch_model.bin");
  auto st = ReadSafetensors(dir_ + "/st_f32/model.safetensors");
  ASSERT_TRUE(bin.ok()) << bin.status();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(
      torch::equal(bin->at("classifier.bias"), st->at("classifier.bias")));
  EXPECT_TRUE(torch::equal(bin->at("extra.alias"), st->at("classifier.bias")));
}

TEST_F(PytorchBinTest, LegacyFormatRefusedWithHint) {
  const std::string path = dir_ + "/legacy_bin/pytorch_model.bin";
  auto bin = ReadPytorchBin(path);
  ASSERT_FALSE(bin.ok());
  EXPECT_THAT(bin.status().message(), HasSubstr(path));
  EXPECT_THAT(bin.status().message(), HasSubstr("legacy"));
  EXPECT_THAT(bin.status().message(), HasSubstr("PyTorch >= 1.6"));
  // The message's one-line conversion, run as given (on a copy), makes a
  // file this reader loads.
  const std::string message(bin.status().message());
  const size_t at = message.find("python3 -c \"");
  ASSERT_NE(at, std::string::npos) << message;
  const std::string copy = dir_ + "/converted.bin";
  std::filesystem::copy_file(path, copy);
  std::string command = message.substr(at);
  command.replace(command.find(path), path.size(), copy);
  ASSERT_EQ(std::system(("/usr/bin/" + command).c_str()), 0) << command;
  auto converted = ReadPytorchBin(copy);
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_FALSE(converted->empty());
}

TEST_F(PytorchBinTest, TruncatedZipIsAnError) {
  const std::string good = dir_ + "/bin_f32/pytorch_model.bin";
  const std::string path = dir_ + "/truncated.bin";
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto bin = ReadPytorchBin(path);
  ASSERT_FALSE(bin.ok());
  EXPECT_THAT(bin.status().message(), HasSubstr(path));
}

TEST(PytorchBinPlainTest, NotATorchFile) {
  const std::string path = ::testing::TempDir() + "/garbage.bin";
  std::ofstream(path) << "hello";
  auto bin = ReadPytorchBin(path);
  ASSERT_FALSE(bin.ok());
  EXPECT_THAT(bin.status().message(), HasSubstr(path));
  EXPECT_THAT(bin.status().message(), HasSubstr("not a torch.save zip"));
}

TEST(PytorchBinPlainTest, StorageNames) {
  EXPECT_EQ(StorageDtype("torch.FloatStorage"), torch::kFloat);
  EXPECT_EQ(StorageDtype("torch.BFloat16Storage"), torch::kBFloat16);
  EXPECT_EQ(StorageDtype("torch.HalfStorage"), torch::kHalf);
  EXPECT_FALSE(StorageDtype("os.system").has_value());
  EXPECT_EQ(SniffTorchFile("PK\x03\x04"), TorchFileKind::kZip);
  EXPECT_EQ(SniffTorchFile("\x80\x02"), TorchFileKind::kLegacyPickle);
  EXPECT_EQ(SniffTorchFile(""), TorchFileKind::kUnknown);
}

}  // namespace
}  // namespace bertology
