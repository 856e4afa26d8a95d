// The subcommands of `bertology`; each takes the arguments after its name
// and returns OK or an error carrying its exit code (exit_codes.h), which
// main.cc reports and maps, once.
#ifndef BERTOLOGY_CLIENT_CLI_COMMANDS_H_
#define BERTOLOGY_CLIENT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cli/args.h"

namespace bertology {
namespace client {

using Argv = std::vector<std::string>;

absl::Status RunInfo(const Argv& argv);
absl::Status RunTokenize(const Argv& argv);
absl::Status RunClassify(const Argv& argv);
absl::Status RunAttention(const Argv& argv);
absl::Status RunSweep(const Argv& argv);
absl::Status RunHealth(const Argv& argv);
absl::Status RunAnalyze(const Argv& argv);
absl::Status RunImportance(const Argv& argv);  // cmd_importance.cc
absl::Status RunPrune(const Argv& argv);       // cmd_importance.cc
absl::Status RunCompare(const Argv& argv);     // cmd_compare.cc
absl::Status RunSegment(const Argv& argv);     // cmd_segment.cc
absl::Status RunStatistics(const Argv& argv);  // cmd_statistics.cc
absl::Status RunPatch(const Argv& argv);       // cmd_patch.cc
absl::Status RunAttribute(const Argv& argv);   // cmd_attribute.cc

// Parses `argv` with `flags` (plus --help). For --help, prints the help and
// returns QuietExit(kExitOk); a usage error comes back with kExitUsage.
absl::StatusOr<Args> ParseCommandArgs(const std::string& usage,
                                      std::vector<FlagSpec> flags,
                                      const Argv& argv);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_COMMANDS_H_
