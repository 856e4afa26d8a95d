// A gtest fixture for the CLI's end-to-end tests: one real bertology-server
// on the golden tiny checkpoint for the whole suite (3 layers x 4 heads,
// labels negative/neutral/positive), a fresh folder per test, and the real
// `bertology` binary run against the server. Tests only.
#ifndef BERTOLOGY_TESTS_INTEGRATION_GOLDEN_SERVER_CLI_TEST_H_
#define BERTOLOGY_TESTS_INTEGRATION_GOLDEN_SERVER_CLI_TEST_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/integration/cli_process.h"
#include "tests/integration/server_process.h"

namespace bertology::testing {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class GoldenServerCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start(
        {"--model=tiny=" + GoldenModelDir(), "--threads=1"});
    ASSERT_TRUE(server.ok()) << server.status();
    ASSERT_TRUE((*server)->WaitServing().ok()) << (*server)->Log();
    server_ = std::move(server).value().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("bertology_", info->test_suite_name(), "_", getpid(),
                        "_", info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // Failed runs keep their files for a look.
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // `bertology command --target=<the server> args...`: common flags first,
  // then the subcommand's.
  static CliResult Run(const std::string& command,
                       std::vector<std::string> args,
                       absl::Duration timeout = absl::Seconds(120)) {
    args.insert(args.begin(), {command, "--target=" + server_->address()});
    return RunCli(args, timeout);
  }

  static inline ServerProcess* server_ = nullptr;
  std::filesystem::path dir_;
};

}  // namespace bertology::testing

#endif  // BERTOLOGY_TESTS_INTEGRATION_GOLDEN_SERVER_CLI_TEST_H_
