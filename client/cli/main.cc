// bertology: the command-line client of bertology-server. A thin dispatcher;
// each subcommand lives in its own cmd_*.cc.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "client/cli/args.h"
#include "client/cli/commands.h"
#include "client/cli/exit_codes.h"

namespace {

constexpr char kUsage[] =
    "bertology: the client of bertology-server (BERT classifiers with "
    "attention-head masks)\n"
    "\n"
    "Usage: bertology COMMAND [FLAGS]   (bertology COMMAND --help for its "
    "flags)\n"
    "\n"
    "Commands:\n"
    "  info       the served models, their labels and the server limits\n"
    "  tokenize   the word pieces of a text or pair\n"
    "  classify   predictions for texts, or accuracy on a dataset, under a "
    "mask\n"
    "  attention  attention maps of one input as JSON, or an HTML head view "
    "and SVGs\n"
    "  sweep      accuracy under many masks over a dataset, sharded over "
    "replicas\n"
    "  health     whether the server is SERVING (gRPC health check)\n"
    "  analyze    per-head attention statistics and pattern classes over a "
    "dataset\n"
    "  importance head importance |d loss / d mask| over a labelled dataset\n"
    "  prune      the pruning curve: mask the least important heads step by "
    "step\n"
    "  compare    per-head attention similarity of two models, and a "
    "difference map\n"
    "  segment    each head read as a word segmenter, scored against gold "
    "words\n"
    "  statistics reference statistics (head means) for --mode=mean and "
    "resample\n"
    "  patch      activation patching of a clean and a corrupted input, per "
    "head\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  RPC error: the server refused the call or no replica answered\n"
    "  2  usage error: unknown command, bad or missing flags\n"
    "  3  data error: unreadable dataset, bad row or label, unwritable "
    "output\n"
    "  4  health: the server answered but is not SERVING\n"
    "Errors go to stderr as 'bertology COMMAND: message'.\n";

}  // namespace

namespace bertology {
namespace client {

bool ParseCommandArgs(const char* command, const std::string& usage,
                      std::vector<FlagSpec> flags, const Argv& argv, Args* args,
                      int* exit) {
  flags.push_back({"help", false, "show this help"});
  absl::StatusOr<Args> parsed = Args::Parse(argv, flags);
  if (!parsed.ok()) {
    *exit = Fail(command, kExitUsage, parsed.status());
    return false;
  }
  if (parsed->Has("help")) {
    std::printf("%s", FlagsHelp(usage, flags).c_str());
    *exit = kExitOk;
    return false;
  }
  *args = *std::move(parsed);
  return true;
}

}  // namespace client
}  // namespace bertology

int main(int argc, char** argv) {
  using namespace bertology::client;  // NOLINT: a thin main
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const std::string command = argv[1];
  const Argv rest(argv + 2, argv + argc);
  if (command == "info") return RunInfo(rest);
  if (command == "tokenize") return RunTokenize(rest);
  if (command == "classify") return RunClassify(rest);
  if (command == "attention") return RunAttention(rest);
  if (command == "sweep") return RunSweep(rest);
  if (command == "health") return RunHealth(rest);
  if (command == "analyze") return RunAnalyze(rest);
  if (command == "importance") return RunImportance(rest);
  if (command == "prune") return RunPrune(rest);
  if (command == "compare") return RunCompare(rest);
  if (command == "segment") return RunSegment(rest);
  if (command == "statistics") return RunStatistics(rest);
  if (command == "patch") return RunPatch(rest);
  std::fprintf(stderr, "bertology: unknown command '%s' (see --help)\n",
               command.c_str());
  return kExitUsage;
}
