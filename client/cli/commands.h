// The subcommands of `bertology`; each takes the arguments after its name
// and returns an ExitCode.
#ifndef BERTOLOGY_CLIENT_CLI_COMMANDS_H_
#define BERTOLOGY_CLIENT_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace bertology {
namespace client {

using Argv = std::vector<std::string>;

int RunInfo(const Argv& argv);
int RunTokenize(const Argv& argv);
int RunClassify(const Argv& argv);
int RunAttention(const Argv& argv);
int RunSweep(const Argv& argv);
int RunHealth(const Argv& argv);
int RunAnalyze(const Argv& argv);
int RunImportance(const Argv& argv);  // cmd_importance.cc
int RunPrune(const Argv& argv);       // cmd_importance.cc
int RunCompare(const Argv& argv);     // cmd_compare.cc
int RunSegment(const Argv& argv);     // cmd_segment.cc
int RunStatistics(const Argv& argv);  // cmd_statistics.cc
int RunPatch(const Argv& argv);       // cmd_patch.cc

// Parses `argv` with `flags` (plus --help); prints the help and sets *exit
// to 0 for --help, prints the error and sets *exit to 2 for a usage error;
// returns whether the command should go on.
class Args;
struct FlagSpec;
bool ParseCommandArgs(const char* command, const std::string& usage,
                      std::vector<FlagSpec> flags, const Argv& argv, Args* args,
                      int* exit);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_COMMANDS_H_
