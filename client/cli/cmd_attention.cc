// `bertology attention`: the attention maps of one input as JSON (tokens,
// rows/columns, one [size x size] matrix per selected head) and, with
// --out-dir, as pictures: the HTML head view and one SVG heatmap per head.
#include <cstdio>
#include <fstream>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/attention_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/mask_flags.h"
#include "client/cli/reference_statistics.h"
#include "client/render/attention_page.h"
#include "client/render/file_output.h"
#include "common/status_macros.h"

namespace bertology {
namespace client {
namespace {

absl::Status AddInts(const std::string& text, const char* flag,
                     google::protobuf::RepeatedField<int32_t>* out) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int v;
    if (!absl::SimpleAtoi(item, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", item, "' is not an integer"));
    }
    out->Add(v);
  }
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "Usage: bertology attention --text-a=TEXT [--text-b=TEXT] "
    "[--layer=..] [--head=..] [--out=FILE] [--out-dir=DIR]\n"
    "Writes {tokens, units, size, maps: [{layer, head, "
    "attention[from][to]}], prediction} as JSON;\n"
    "--out-dir also draws them: a self-contained HTML head view (open "
    "it in a\nbrowser) and an SVG heatmap per selected head.";

std::vector<FlagSpec> AttentionFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"text-a", true, "the text (or first positional)", "TEXT"});
  flags.push_back({"text-b", true, "second text of a pair", "TEXT"});
  flags.push_back({"layer", true, "layers to return (default all)", "L,.."});
  flags.push_back({"head", true, "heads to return (default all)", "H,.."});
  flags.push_back(
      {"word", false, "word-level maps (Clark et al.: to = sum, from = mean)"});
  flags.push_back(
      {"out", true, "write the JSON here (default stdout)", "FILE"});
  flags.push_back({"out-dir", true,
                   "write attention.json, attention.html (head view) and "
                   "attention_L{l}_H{h}.svg here instead of JSON to stdout",
                   "DIR"});
  flags.push_back({"float16", false,
                   "fetch the maps as float16 (half the bytes, ~3 digits)"});
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  return flags;
}

// The request from the flags; kExitUsage errors.
absl::StatusOr<v1::GetAttentionRequest> BuildAttentionRequest(
    const Args& args) {
  const auto& pos = args.positional();
  v1::GetAttentionRequest request;
  request.set_model(args.Get("model"));
  request.mutable_input()->set_text_a(
      args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
  request.mutable_input()->set_text_b(
      args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
  if (request.input().text_a().empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("--text-a is required"));
  }
  absl::Status s =
      AddInts(args.Get("layer"), "layer", request.mutable_layers());
  if (s.ok()) s = AddInts(args.Get("head"), "head", request.mutable_heads());
  if (!s.ok()) return CommandError(kExitUsage, s);
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return CommandError(kExitUsage, mask.status());
  *request.mutable_head_mask() = *mask;
  request.set_granularity(args.Has("word") ? v1::GRANULARITY_WORD
                                           : v1::GRANULARITY_TOKEN);
  request.set_encoding(args.Has("float16") ? v1::ATTENTION_ENCODING_FLOAT16
                                           : v1::ATTENTION_ENCODING_FLOAT32);
  return request;
}

// The JSON to --out, to stdout, or with the pictures into --out-dir
// (attention.json, attention.html and attention_L{l}_H{h}.svg; the paths
// written go to stdout so a script can pick them up).
absl::Status WriteAttention(const Args& args,
                            const v1::GetAttentionRequest& request,
                            const v1::GetAttentionResponse& response) {
  absl::StatusOr<nlohmann::json> json = AttentionJson(response);
  if (!json.ok()) return CommandError(kExitRpc, json.status());
  const std::string text = json->dump() + "\n";
  if (args.Has("out")) {
    std::ofstream file(args.Get("out"));
    file << text;
    file.close();
    if (!file.good()) {
      return CommandError(kExitData, absl::DataLossError(absl::StrCat(
                                         "cannot write ", args.Get("out"))));
    }
  } else if (!args.Has("out-dir")) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (!args.Has("out-dir")) return absl::OkStatus();
  absl::StatusOr<render::AttentionData> data =
      ToAttentionData(response, request.input());
  if (!data.ok()) return CommandError(kExitRpc, data.status());
  const std::string dir = args.Get("out-dir");
  std::vector<std::string> written;
  absl::Status s =
      render::WriteOutputFile(dir, "attention.json", text, &written);
  if (s.ok()) s = render::WriteAttentionFiles(*data, dir, &written);
  for (const std::string& path : written) std::printf("%s\n", path.c_str());
  if (!s.ok()) return CommandError(kExitData, s);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunAttention(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, AttentionFlags(), argv));
  ASSIGN_OR_RETURN(v1::GetAttentionRequest request,
                   BuildAttentionRequest(args));
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  // --text-a is the text here, not a column: the reference file is read
  // with the default columns.
  RETURN_IF_ERROR(
      ResolveMaskStatistics(stub.get(), args,
                            /*column_flags=*/false,
                            request.mutable_head_mask()->mutable_statistics()));
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args));
  v1::GetAttentionResponse response;
  absl::Status s =
      FromGrpcStatus(stub->GetAttention(context.get(), request, &response));
  if (!s.ok()) return CommandError(kExitRpc, s);
  return WriteAttention(args, request, response);
}

}  // namespace client
}  // namespace bertology
