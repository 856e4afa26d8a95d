// The exit codes of the `bertology` CLI, which shell scripts and Kubernetes
// jobs rely on (documented in `bertology --help`).
#ifndef BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_
#define BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_

#include "absl/status/status.h"

namespace bertology {
namespace client {

enum ExitCode {
  kExitOk = 0,
  kExitRpc = 1,        // the server refused or could not be reached
  kExitUsage = 2,      // bad flags or arguments
  kExitData = 3,       // a dataset, label or output file problem
  kExitUnhealthy = 4,  // `health`: reachable but not SERVING
};

// Prints "bertology <command>: <message>" to stderr and returns `code`.
int Fail(const char* command, ExitCode code, const absl::Status& status);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_
