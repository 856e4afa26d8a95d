#include "server/service/security/authorizer.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

constexpr char kFull[] = "full-token-0123456789abcdef";
constexpr char kRead[] = "read-token-0123456789abcdef";

constexpr const char* kRpcs[] = {
    "GetModelInfo",  "Tokenize",        "Classify",   "GetAttention",
    "SweepAblation", "AnalyzeHeads",    "PruneCurve", "HeadImportance",
    "SegmentWords",  "CompareAttention"};

// A token file at a fresh path with `text`; the caller removes it.
std::string WriteTokenFile(const std::string& text) {
  char path[] = "/tmp/authorizer_test.XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

CallCredentials Bearer(const std::string& token) {
  CallCredentials c;
  c.authorization = "Bearer " + token;
  return c;
}

TEST(AuthorizerTest, ReadOnlyTokensReadAndFullTokensDoEverything) {
  const std::string path =
      WriteTokenFile(std::string(kFull) + " full\n" + kRead + " readonly\n");
  auto file = TokenFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  Authorizer auth(false, *std::move(file));
  int readonly_rpcs = 0;
  for (const char* rpc : kRpcs) {
    EXPECT_TRUE(auth.Check(rpc, Bearer(kFull)).ok()) << rpc;
    absl::Status read = auth.Check(rpc, Bearer(kRead));
    if (IsReadOnlyRpc(rpc)) {
      ++readonly_rpcs;
      EXPECT_TRUE(read.ok()) << rpc << ": " << read;
    } else {
      EXPECT_TRUE(absl::IsPermissionDenied(read)) << rpc << ": " << read;
      EXPECT_THAT(read.message(), HasSubstr("readonly"));
    }
  }
  EXPECT_EQ(readonly_rpcs, 4);
  // "bearer" in any case; surrounding spaces are not part of the token.
  CallCredentials lower;
  lower.authorization = std::string("bearer  ") + kFull + " ";
  EXPECT_TRUE(auth.Check("SweepAblation", lower).ok());
  std::remove(path.c_str());
  absl::Status gone = auth.Check("Classify", Bearer(kFull));
  EXPECT_TRUE(absl::IsUnavailable(gone)) << gone;
}

TEST(AuthorizerTest, MissingOrWrongTokensAreUnauthenticated) {
  const std::string path = WriteTokenFile(std::string(kFull) + " full\n");
  auto file = TokenFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  Authorizer auth(false, *std::move(file));
  absl::Status none = auth.Check("Classify", CallCredentials{});
  EXPECT_TRUE(absl::IsUnauthenticated(none)) << none;
  EXPECT_THAT(none.message(), HasSubstr("missing bearer token"));
  absl::Status wrong = auth.Check("Classify", Bearer(kRead));
  EXPECT_TRUE(absl::IsUnauthenticated(wrong)) << wrong;
  EXPECT_THAT(wrong.message(), HasSubstr("invalid token"));
  CallCredentials basic;
  basic.authorization = std::string("Basic ") + kFull;
  EXPECT_TRUE(absl::IsUnauthenticated(auth.Check("Classify", basic)));
  std::remove(path.c_str());
}

TEST(AuthorizerTest, ClientCertificateRequiredWhenConfigured) {
  Authorizer mtls(true, nullptr);
  CallCredentials with_cert;
  with_cert.client_cert_verified = true;
  EXPECT_TRUE(mtls.Check("SweepAblation", with_cert).ok());
  absl::Status without = mtls.Check("GetModelInfo", CallCredentials{});
  EXPECT_TRUE(absl::IsUnauthenticated(without)) << without;
  EXPECT_THAT(without.message(), HasSubstr("client certificate"));
  // Nothing configured: everyone may call.
  Authorizer open(false, nullptr);
  EXPECT_TRUE(open.Check("SweepAblation", CallCredentials{}).ok());
}

}  // namespace
}  // namespace bertology
