// bertology: the command-line client of bertology-server. A thin dispatcher;
// each subcommand lives in its own cmd_*.cc.
#include <cstdio>
#include <cstring>
#include <map>
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
    "  attribute  token attribution (saliency, integrated gradients, "
    "rollout, ...)\n"
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

absl::StatusOr<Args> ParseCommandArgs(const std::string& usage,
                                      std::vector<FlagSpec> flags,
                                      const Argv& argv) {
  flags.push_back({"help", false, "show this help"});
  absl::StatusOr<Args> parsed = Args::Parse(argv, flags);
  if (!parsed.ok()) return CommandError(kExitUsage, parsed.status());
  if (parsed->Has("help")) {
    std::printf("%s", FlagsHelp(usage, flags).c_str());
    return QuietExit(kExitOk);
  }
  return parsed;
}

namespace {

// The subcommand named `command`, or null.
using Command = absl::Status (*)(const Argv&);
Command FindCommand(const std::string& command) {
  static const std::map<std::string, Command> kCommands = {
      {"info", RunInfo},         {"tokenize", RunTokenize},
      {"classify", RunClassify}, {"attention", RunAttention},
      {"sweep", RunSweep},       {"health", RunHealth},
      {"analyze", RunAnalyze},   {"importance", RunImportance},
      {"prune", RunPrune},       {"compare", RunCompare},
      {"segment", RunSegment},   {"statistics", RunStatistics},
      {"patch", RunPatch},       {"attribute", RunAttribute},
  };
  auto it = kCommands.find(command);
  return it == kCommands.end() ? nullptr : it->second;
}

}  // namespace

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
  const Command run = FindCommand(command);
  if (run == nullptr) {
    std::fprintf(stderr, "bertology: unknown command '%s' (see --help)\n",
                 command.c_str());
    return kExitUsage;
  }
  // Every command's errors end here: one message, one exit code.
  return ReportExit(command, run(Argv(argv + 2, argv + argc)));
}
