// What a command's pure writer returns, and the one place it reaches the
// disk or stdout: a command builds its request, makes the call, turns the
// result into CommandOutput (no I/O), and EmitOutput writes it.
#ifndef BERTOLOGY_CLIENT_CLI_COMMAND_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_COMMAND_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace bertology {
namespace client {

struct OutputFile {
  std::string name;  // within the output folder
  std::string contents;
};

struct CommandOutput {
  // Printed to stdout first (e.g. a table, or the CSV when no folder is
  // given).
  std::string stdout_text;
  // Written into `dir` when not empty; each path written is then printed
  // on its own line.
  std::string dir;
  std::vector<OutputFile> files;
  // Printed to stdout after the list of files (e.g. a summary table).
  std::string stdout_after;
  // Printed to stderr last (e.g. a dataset's accuracy).
  std::string stderr_text;
};

// Writes `output`: the files (kExitData naming the file on failure; those
// before it stay written), then stdout, then stderr.
absl::Status EmitOutput(const CommandOutput& output);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_COMMAND_OUTPUT_H_
