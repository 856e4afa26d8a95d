#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/core/checkpoint/state_dict.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/safetensors_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file with the given JSON header and `data_bytes` zero bytes of data.
  std::string WriteRaw(const std::string& header, size_t data_bytes,
                       uint64_t claimed_len = UINT64_MAX) {
    const std::string path = dir_ + "/model.safetensors";
    std::ofstream out(path, std::ios::binary);
    uint64_t n = claimed_len == UINT64_MAX ? header.size() : claimed_len;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
    out << header << std::string(data_bytes, '\0');
    return path;
  }
  void ExpectError(const std::string& path, const std::string& fault) {
    auto sd = ReadSafetensors(path);
    ASSERT_FALSE(sd.ok()) << "expected: " << fault;
    EXPECT_THAT(sd.status().message(), HasSubstr(path));
    EXPECT_THAT(sd.status().message(), HasSubstr(fault));
  }

  std::string dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryDtype) {
  StateDict in;
  in["a.f32"] = torch::arange(6, torch::kFloat).reshape({2, 3});
  in["b.f16"] = torch::randn({4}).to(torch::kHalf);
  in["c.bf16"] = torch::randn({2, 2}).to(torch::kBFloat16);
  in["d.f64"] = torch::randn({3}, torch::kDouble);
  in["e.i64"] = torch::arange(5, torch::kLong);
  in["f.i32"] = torch::arange(3, torch::kInt);
  in["g.empty"] = torch::zeros({0, 4});
  in["h.noncontig"] = torch::arange(6, torch::kFloat).reshape({2, 3}).t();
  const std::string path = dir_ + "/rt.safetensors";
  ASSERT_TRUE(WriteSafetensors(in, path).ok());
  auto out = ReadSafetensors(path);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), in.size());
  for (const auto& [k, v] : in) {
    const torch::Tensor& got = out->at(k);
    EXPECT_EQ(got.scalar_type(), v.scalar_type()) << k;
    EXPECT_EQ(got.sizes(), v.sizes()) << k;
    EXPECT_TRUE(torch::equal(got, v)) << k;
  }
  EXPECT_EQ(DtypeName(out->at("c.bf16").scalar_type()), "BF16");
}

TEST_F(SafetensorsTest, DataStartsAligned) {
  StateDict in;
  in["x"] = torch::ones({3});
  const std::string path = dir_ + "/a.safetensors";
  ASSERT_TRUE(WriteSafetensors(in, path).ok());
  std::ifstream f(path, std::ios::binary);
  unsigned char b[8];
  f.read(reinterpret_cast<char*>(b), 8);
  EXPECT_EQ(b[0] % 8, 0);  // header length (small) is a multiple of 8
}

TEST_F(SafetensorsTest, MissingFile) {
  ExpectError(dir_ + "/nope", "cannot open");
}

TEST_F(SafetensorsTest, TooShort) {
  const std::string path = dir_ + "/short.safetensors";
  std::ofstream(path) << "abc";
  ExpectError(path, "file too short");
}

TEST_F(SafetensorsTest, HeaderLengthPastEof) {
  ExpectError(WriteRaw("{}", 0, /*claimed_len=*/1000),
              "runs past the end of the file");
}

TEST_F(SafetensorsTest, BadJson) {
  ExpectError(WriteRaw("{\"a\": [", 0), "not a JSON object");
}

TEST_F(SafetensorsTest, UnknownDtypeNamed) {
  ExpectError(WriteRaw(R"({"w":{"dtype":"F8_E4M3","shape":[2],)"
                       R"("data_offsets":[0,2]}})",
                       2),
              "unknown dtype F8_E4M3");
}

TEST_F(SafetensorsTest, HeaderLiesAboutSizes) {
  ExpectError(WriteRaw(R"({"w":{"dtype":"F32","shape":[2,3],)"
                       R"("data_offsets":[0,20]}})",
                       20),
              "header lies about sizes: tensor w of dtype F32 and shape "
              "[2, 3] needs 24 bytes but data_offsets give 20");
}

TEST_F(SafetensorsTest, OffsetsPastData) {
  ExpectError(WriteRaw(R"({"w":{"dtype":"F32","shape":[2],)"
                       R"("data_offsets":[0,8]}})",
                       4),
              "fall outside the data section");
}

TEST_F(SafetensorsTest, NegativeDim) {
  ExpectError(WriteRaw(R"({"w":{"dtype":"F32","shape":[-1],)"
                       R"("data_offsets":[0,0]}})",
                       0),
              "negative");
}

TEST_F(SafetensorsTest, MetadataIgnored) {
  auto sd = ReadSafetensors(WriteRaw(
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"I32","shape":[1],)"
      R"("data_offsets":[0,4]}})",
      4));
  ASSERT_TRUE(sd.ok()) << sd.status();
  EXPECT_EQ(sd->size(), 1u);
  EXPECT_EQ(sd->at("w").item<int>(), 0);
}

TEST_F(SafetensorsTest, SharedTinyCheckpointReads) {
  const char* shared = std::getenv("BERTOLOGY_SHARED_DIR");
  const std::string path =
      std::string(shared ? shared : "") +
      "/fixtures/checkpoints/tiny-bert-safetensors/model.safetensors";
  if (!shared || !std::filesystem::exists(path)) {
    GTEST_SKIP() << "shared fixture absent: " << path;
  }
  auto sd = ReadSafetensors(path);
  ASSERT_TRUE(sd.ok()) << sd.status();
  EXPECT_EQ(sd->at("embeddings.word_embeddings.weight").sizes(),
            (std::vector<int64_t>{256, 32}));
  EXPECT_EQ(sd->at("embeddings.word_embeddings.weight").scalar_type(),
            torch::kFloat);
}

}  // namespace
}  // namespace bertology
