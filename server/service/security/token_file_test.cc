#include "server/service/security/token_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFull[] = "full-token-0123456789abcdef";
constexpr char kRead[] = "read-token-0123456789abcdef";

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/token_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/tokens";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove((path_ + ".new").c_str());
    rmdir(dir_.c_str());
  }
  // Writes `text` through a rename, as a Secret update does, so the inode
  // changes even within the file system's mtime granularity.
  void Write(const std::string& text) {
    const std::string tmp = path_ + ".new";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }
  std::string dir_, path_;
};

TEST_F(TokenFileTest, LooksUpScopes) {
  Write(std::string("# tokens\n") + kFull + " full\n\n  " + kRead +
        "\treadonly  \n");
  auto file = TokenFile::Open(path_);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*(*file)->Lookup(kFull), TokenScope::kFull);
  EXPECT_EQ(*(*file)->Lookup(kRead), TokenScope::kReadOnly);
  // A prefix, an extension and a one-character change are all unknown.
  for (std::string wrong :
       {std::string(kFull).substr(0, 20), std::string(kFull) + "x",
        std::string("g") + (kFull + 1), std::string()}) {
    EXPECT_TRUE(absl::IsNotFound((*file)->Lookup(wrong).status())) << wrong;
  }
}

TEST_F(TokenFileTest, ReloadsWhenTheFileChanges) {
  Write(std::string(kFull) + " full\n");
  auto file = TokenFile::Open(path_);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Lookup(kFull).ok());
  Write(std::string(kRead) + " full\n");  // rotated
  EXPECT_TRUE(absl::IsNotFound((*file)->Lookup(kFull).status()));
  EXPECT_EQ(*(*file)->Lookup(kRead), TokenScope::kFull);
  Write(std::string(kRead) + " readonly\n");  // scope lowered
  EXPECT_EQ(*(*file)->Lookup(kRead), TokenScope::kReadOnly);
}

TEST_F(TokenFileTest, FailsClosedUntilTheFileIsGoodAgain) {
  Write(std::string(kFull) + " full\n");
  auto file = TokenFile::Open(path_);
  ASSERT_TRUE(file.ok()) << file.status();
  Write(std::string(kFull) + " admin\n");
  absl::Status bad = (*file)->Lookup(kFull).status();
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_THAT(bad.message(), HasSubstr("unknown scope 'admin'"));
  std::remove(path_.c_str());
  absl::Status gone = (*file)->Lookup(kFull).status();
  EXPECT_TRUE(absl::IsUnavailable(gone)) << gone;
  EXPECT_THAT(gone.message(), HasSubstr(path_));
  Write(std::string(kFull) + " full\n");
  EXPECT_EQ(*(*file)->Lookup(kFull), TokenScope::kFull);
}

TEST_F(TokenFileTest, OpenNamesTheFileAndLine) {
  auto missing = TokenFile::Open(path_);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("--token_file=" + path_ + ": cannot read"));
  Write(std::string(kFull) + " full\nshort full\n");
  auto short_token = TokenFile::Open(path_);
  EXPECT_THAT(short_token.status().message(), HasSubstr(path_ + " line 2"));
  EXPECT_THAT(short_token.status().message(), HasSubstr("16 to 4096"));
  // The message never quotes the secret.
  Write(std::string(kFull) + "\n");
  auto one_field = TokenFile::Open(path_);
  EXPECT_THAT(one_field.status().message(), HasSubstr("line 1"));
  EXPECT_THAT(one_field.status().message(), Not(HasSubstr(kFull)));
  Write("# nothing\n\n");
  EXPECT_THAT(TokenFile::Open(path_).status().message(),
              HasSubstr("no token in the file"));
}

}  // namespace
}  // namespace bertology
