#include "server/core/checkpoint/file_digest.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

std::string Write(const std::string& name, const std::string& bytes) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/", name, "-", getpid());
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Known answers: FIPS 180-2's "abc" and the empty message.
TEST(FileDigestTest, KnownAnswers) {
  const std::string abc = Write("abc", "abc");
  EXPECT_EQ(*FileSha256(abc),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string empty = Write("empty", "");
  EXPECT_EQ(*FileSha256(empty),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::remove(abc.c_str());
  std::remove(empty.c_str());
}

// Across the 1 MiB block boundary: one byte changed at the end changes it;
// a copy (another path, another mtime) does not.
TEST(FileDigestTest, ContentNotPathOrTime) {
  std::string bytes((1 << 20) + 17, 'x');
  const std::string a = Write("big-a", bytes);
  const std::string copy = Write("big-copy", bytes);
  bytes.back() = 'y';
  const std::string b = Write("big-b", bytes);
  EXPECT_EQ(*FileSha256(a), *FileSha256(copy));
  EXPECT_NE(*FileSha256(a), *FileSha256(b));
  for (const auto& p : {a, copy, b}) std::remove(p.c_str());
}

TEST(FileDigestTest, MissingFileNamesIt) {
  auto digest = FileSha256("/nonexistent/model.safetensors");
  ASSERT_FALSE(digest.ok());
  EXPECT_NE(digest.status().message().find("/nonexistent/model.safetensors"),
            std::string::npos);
}

}  // namespace
}  // namespace bertology
