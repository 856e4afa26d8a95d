// `bertology patch`: activation patching of one clean and one corrupted
// input (Patch): the strongest sites as a table, and with --out the plan
// and every result as JSON and CSV with a heatmap of the effects.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/patch_output.h"
#include "client/render/file_output.h"
#include "client/render/patch_figure.h"
#include "common/status_macros.h"

namespace bertology {
namespace client {
namespace {

constexpr char kUsage[] =
    "Usage: bertology patch --clean=TEXT --corrupted=TEXT [--clean-b=TEXT "
    "--corrupted-b=TEXT]\n"
    "       [--sites=heads|head-positions|residual-positions] "
    "[--direction=clean-into-corrupted|corrupted-into-clean]\n"
    "       [--answer=N --foil=N] [--method=exact|attribution] [--top=N] "
    "[--out=DIR]\n"
    "Activation patching: for every site (a head's output, a head's "
    "output at one\ntoken, or the residual stream entering a layer at one "
    "token), runs one input with the other run's activation "
    "there and scores the\nlogit difference logit[answer] - logit[foil]. "
    "The normalized effect is 1 where\nthe patched run behaves as the clean "
    "one and 0 as the corrupted one. The two\ninputs must tokenize to the "
    "same length. Prints the --top sites by\n|normalized effect| when "
    "denoising (clean-into-corrupted) and by |1 - normalized\neffect| when "
    "noising (corrupted-into-clean, where a site that does not matter\n"
    "scores 1); --out writes patch.json, patch.csv and patch_heads.svg\n"
    "(--sites=heads), "
    "patch_head_positions.svg (--sites=head-positions) or\n"
    "patch_residual_positions.svg (--sites=residual-positions: layers x "
    "tokens, as\ncausal tracing draws it).";

std::vector<FlagSpec> PatchFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  const std::vector<FlagSpec> more = {
      {"clean", true, "the clean input's text (its first text)", "TEXT"},
      {"corrupted", true, "the corrupted input's text", "TEXT"},
      {"clean-b", true, "the clean input's second text (pairs)", "TEXT"},
      {"corrupted-b", true, "the corrupted input's second text (pairs)",
       "TEXT"},
      {"sites", true,
       "heads (every layer x head, all positions; default), "
       "head-positions (every layer x head x token) or residual-positions "
       "(the residual stream entering every layer, and the encoder output, "
       "x token)",
       "S"},
      {"direction", true,
       "clean-into-corrupted (default: which sites restore the clean "
       "behaviour) or corrupted-into-clean",
       "D"},
      {"answer", true,
       "class whose logit counts up (default: the clean prediction)", "N"},
      {"foil", true,
       "class whose logit counts down (default: the corrupted prediction, "
       "or the clean runner-up)",
       "N"},
      {"method", true,
       "exact (default: a patched forward pass per site) or attribution "
       "(the first-order estimate of every site from one forward and one "
       "backward pass)",
       "M"},
      {"top", true, "sites in the table (default 20; 0: all)", "N"},
      {"batch-rows", true, "sites per forward pass (0: the server's default)",
       "N"},
      {"out", true,
       "write patch.json, patch.csv and the SVG heatmap into this directory",
       "DIR"},
      {"quiet", false, "no progress on stderr"},
  };
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

// The request from the flags; INVALID_ARGUMENT for a bad one.
absl::StatusOr<v1::PatchRequest> BuildRequest(const Args& args) {
  v1::PatchRequest request;
  request.set_model(args.Get("model"));
  if (!args.Has("clean") || !args.Has("corrupted")) {
    return absl::InvalidArgumentError("--clean and --corrupted are required");
  }
  if (args.Has("clean-b") != args.Has("corrupted-b")) {
    return absl::InvalidArgumentError(
        "a pair needs both --clean-b and --corrupted-b");
  }
  request.mutable_clean()->set_text_a(args.Get("clean"));
  request.mutable_clean()->set_text_b(args.Get("clean-b"));
  request.mutable_corrupted()->set_text_a(args.Get("corrupted"));
  request.mutable_corrupted()->set_text_b(args.Get("corrupted-b"));
  const std::string sites = args.Get("sites", "heads");
  if (sites == "heads") {
    request.set_all_heads(true);
  } else if (sites == "head-positions") {
    request.set_all_head_positions(true);
  } else if (sites == "residual-positions") {
    request.set_all_residual_positions(true);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--sites=", sites,
                     " is not heads, head-positions or residual-positions"));
  }
  const std::string direction = args.Get("direction", "clean-into-corrupted");
  if (direction == "clean-into-corrupted") {
    request.set_direction(v1::PATCH_DIRECTION_CLEAN_INTO_CORRUPTED);
  } else if (direction == "corrupted-into-clean") {
    request.set_direction(v1::PATCH_DIRECTION_CORRUPTED_INTO_CLEAN);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--direction=", direction,
                     " is not clean-into-corrupted or corrupted-into-clean"));
  }
  const std::string method = args.Get("method", "exact");
  if (method == "exact") {
    request.set_method(v1::PATCH_METHOD_EXACT);
  } else if (method == "attribution") {
    request.set_method(v1::PATCH_METHOD_ATTRIBUTION);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--method=", method, " is not exact or attribution"));
  }
  for (const char* flag : {"answer", "foil", "batch-rows"}) {
    absl::StatusOr<int> v = args.GetInt(flag, 0);
    if (!v.ok()) return v.status();
    if (*v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", *v, " is negative"));
    }
  }
  if (args.Has("answer")) request.set_answer(*args.GetInt("answer", 0));
  if (args.Has("foil")) request.set_foil(*args.GetInt("foil", 0));
  request.set_max_batch_rows(*args.GetInt("batch-rows", 0));
  return request;
}

// The plan and every result; the stream's status, INTERNAL when it skipped
// or repeated a site.
absl::StatusOr<PatchRun> ReadPatchStream(
    grpc::ClientReaderInterface<v1::PatchResponse>* reader, bool quiet) {
  PatchRun run;
  bool has_plan = false;
  v1::PatchResponse event;
  while (reader->Read(&event)) {
    if (event.has_plan()) {
      run.plan = event.plan();
      has_plan = true;
    } else if (event.has_results()) {
      for (const v1::PatchResult& r : event.results().results()) {
        run.results.push_back(r);
      }
      if (!quiet) {
        std::fprintf(stderr, "patched %zu/%d sites\n", run.results.size(),
                     run.plan.num_sites());
      }
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return s;
  if (!has_plan) return absl::InternalError("the server sent no plan");
  s = CheckPatchRun(run);
  if (!s.ok()) return s;
  return run;
}

absl::Status WriteOut(const PatchRun& run, const v1::PatchRequest& request,
                      const std::string& dir,
                      std::vector<std::string>* written) {
  absl::Status s =
      render::WriteOutputFile(dir, "patch.json", PatchJson(run), written);
  if (s.ok()) {
    s = render::WriteOutputFile(dir, "patch.csv", PatchCsv(run), written);
  }
  if (!s.ok()) return s;
  if (request.all_residual_positions()) {
    return render::WriteOutputFile(dir, "patch_residual_positions.svg",
                                   render::PatchGridSvg(PatchResidualGrid(run)),
                                   written);
  }
  return request.all_head_positions()
             ? render::WriteOutputFile(
                   dir, "patch_head_positions.svg",
                   render::PatchGridSvg(PatchPositionGrid(run)), written)
             : render::WriteOutputFile(dir, "patch_heads.svg",
                                       render::PatchGridSvg(PatchHeadGrid(run)),
                                       written);
}

}  // namespace

absl::Status RunPatch(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, PatchFlags(), argv));
  absl::StatusOr<v1::PatchRequest> request = BuildRequest(args);
  if (!request.ok()) return CommandError(kExitUsage, request.status());
  absl::StatusOr<int> top = args.GetInt("top", 20);
  if (!top.ok()) return CommandError(kExitUsage, top.status());
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  // A head x position run is thousands of sites: give it time.
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args, absl::Minutes(30)));
  auto reader = stub->Patch(context.get(), *request);
  absl::StatusOr<PatchRun> run =
      ReadPatchStream(reader.get(), args.Has("quiet"));
  if (!run.ok()) return CommandError(kExitRpc, run.status());
  std::string table = PatchTable(*run, *top);
  if (args.Has("out")) {
    std::vector<std::string> written;
    absl::Status s = WriteOut(*run, *request, args.Get("out"), &written);
    if (!s.ok()) return CommandError(kExitData, s);
    absl::StrAppend(&table, "\nWrote:\n");
    for (const std::string& path : written) {
      absl::StrAppend(&table, "  ", path, "\n");
    }
  }
  std::fputs(table.c_str(), stdout);
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
