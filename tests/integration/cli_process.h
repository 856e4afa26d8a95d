// Runs the real `bertology` CLI binary to completion: the harness of the
// end-to-end tests that take the path a user's shell takes.
#ifndef BERTOLOGY_TESTS_INTEGRATION_CLI_PROCESS_H_
#define BERTOLOGY_TESTS_INTEGRATION_CLI_PROCESS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace bertology {
namespace testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string CliBinary();  // $BERTOLOGY_BIN_DIR/bertology

// Runs `bertology args...` (after `wrapper...`, e.g. a command that sets up
// a namespace and then execs the rest) with stdout and stderr captured
// through files (no pipe to fill up), killing it after `timeout`.
CliResult RunCli(const std::vector<std::string>& args,
                 absl::Duration timeout = absl::Seconds(120),
                 const std::vector<std::string>& wrapper = {});

// Exit code and both streams, for failure messages.
std::string Describe(const CliResult& r);

}  // namespace testing
}  // namespace bertology

#endif  // BERTOLOGY_TESTS_INTEGRATION_CLI_PROCESS_H_
