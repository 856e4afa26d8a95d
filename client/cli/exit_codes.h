// The exit codes of the `bertology` CLI, which shell scripts and Kubernetes
// jobs rely on (documented in `bertology --help`), and how a command's
// error carries its exit code: as a payload of its absl::Status, so it
// travels through StatusOr and RETURN_IF_ERROR unchanged and main.cc maps
// it once (ReportExit).
#ifndef BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_
#define BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_

#include <string>

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

// `status` (an error) ending the command with exit code `code`. An OK
// `status` is a caller's bug: it becomes UNKNOWN, so it is never lost.
absl::Status CommandError(ExitCode code, const absl::Status& status);

// Ends the command with `code` and no message (its output said it all):
// --help (kExitOk), `health` on a server not SERVING (kExitUnhealthy).
absl::Status QuietExit(ExitCode code);

// The exit code of a command's result: kExitOk for OK, the code a
// CommandError or QuietExit gave it, kExitRpc for an error that carries
// none (what the server or the transport sent back).
ExitCode ExitCodeOf(const absl::Status& status);

// main.cc's one mapping: prints "bertology <command>: <message>" to stderr
// for an error (not for a QuietExit; the status code's name where the
// message is empty, as from an older server that lacks an RPC) and returns
// the exit code.
int ReportExit(const std::string& command, const absl::Status& status);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_EXIT_CODES_H_
