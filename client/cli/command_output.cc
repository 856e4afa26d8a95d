#include "client/cli/command_output.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "client/render/file_output.h"

namespace bertology {
namespace client {

absl::Status EmitOutput(const CommandOutput& output) {
  std::vector<std::string> written;
  if (!output.dir.empty()) {
    for (const OutputFile& file : output.files) {
      absl::Status s = render::WriteOutputFile(output.dir, file.name,
                                               file.contents, &written);
      if (!s.ok()) return CommandError(kExitData, s);
    }
  }
  std::string text = output.stdout_text;
  for (const std::string& path : written) absl::StrAppend(&text, path, "\n");
  absl::StrAppend(&text, output.stdout_after);
  std::fputs(text.c_str(), stdout);
  // stdout is not flushed first: as when each line was printed, a file
  // or pipe holding both gets stderr's line when it is written and
  // stdout's text at exit.
  if (!output.stderr_text.empty()) {
    std::fputs(output.stderr_text.c_str(), stderr);
  }
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
