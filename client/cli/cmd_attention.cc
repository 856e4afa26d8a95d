// `bertology attention`: the attention maps of one input as JSON (tokens,
// rows/columns, one [size x size] matrix per selected head).
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "client/cli/mask_flags.h"
#include "nlohmann/json.hpp"

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

}  // namespace

int RunAttention(const Argv& argv) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"text-a", true, "the text (or first positional)", "TEXT"});
  flags.push_back({"text-b", true, "second text of a pair", "TEXT"});
  flags.push_back({"layer", true, "layers to return (default all)", "L,.."});
  flags.push_back({"head", true, "heads to return (default all)", "H,.."});
  flags.push_back(
      {"word", false, "word-level maps (Clark et al.: to = sum, from = mean)"});
  flags.push_back(
      {"out", true, "write the JSON here (default stdout)", "FILE"});
  for (FlagSpec& f : HeadMaskFlags()) flags.push_back(f);
  Args args;
  int exit = 0;
  if (!ParseCommandArgs(
          "attention",
          "Usage: bertology attention --text-a=TEXT [--text-b=TEXT] "
          "[--layer=..] [--head=..] [--out=FILE]\n"
          "Writes {tokens, units, size, maps: [{layer, head, "
          "attention[from][to]}], prediction} as JSON.",
          flags, argv, &args, &exit)) {
    return exit;
  }
  const auto& pos = args.positional();
  v1::GetAttentionRequest request;
  request.set_model(args.Get("model"));
  request.mutable_input()->set_text_a(
      args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
  request.mutable_input()->set_text_b(
      args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
  if (request.input().text_a().empty()) {
    return Fail("attention", kExitUsage,
                absl::InvalidArgumentError("--text-a is required"));
  }
  absl::Status s =
      AddInts(args.Get("layer"), "layer", request.mutable_layers());
  if (s.ok()) s = AddInts(args.Get("head"), "head", request.mutable_heads());
  if (!s.ok()) return Fail("attention", kExitUsage, s);
  auto mask = ParseHeadMask(args);
  if (!mask.ok()) return Fail("attention", kExitUsage, mask.status());
  *request.mutable_head_mask() = *mask;
  request.set_granularity(args.Has("word") ? v1::GRANULARITY_WORD
                                           : v1::GRANULARITY_TOKEN);
  request.set_encoding(v1::ATTENTION_ENCODING_FLOAT32);
  auto channel = MakeChannel(args.Get("target", kDefaultTarget));
  if (!channel.ok()) return Fail("attention", kExitUsage, channel.status());
  auto stub = v1::Bertology::NewStub(*channel);
  auto context = NewContext(args);
  if (!context.ok()) return Fail("attention", kExitUsage, context.status());
  v1::GetAttentionResponse response;
  s = FromGrpc(stub->GetAttention(context->get(), request, &response));
  if (!s.ok()) return Fail("attention", kExitRpc, s);

  using nlohmann::json;
  json tokens = json::array(), units = json::array(), maps = json::array();
  for (const v1::Token& t : response.tokens()) {
    tokens.push_back({{"text", t.text()},
                      {"segment", t.segment()},
                      {"word", t.word_index()},
                      {"special", t.special()}});
  }
  for (const v1::AttentionUnit& u : response.units()) {
    units.push_back({{"text", u.text()},
                     {"segment", u.segment()},
                     {"first_token", u.first_token()},
                     {"num_tokens", u.num_tokens()},
                     {"special", u.special()}});
  }
  const int n = response.size();
  for (const v1::AttentionMap& m : response.maps()) {
    if (m.data().size() != static_cast<size_t>(n) * n * sizeof(float)) {
      return Fail("attention", kExitRpc,
                  absl::DataLossError("a map has the wrong size"));
    }
    json rows = json::array();
    for (int r = 0; r < n; ++r) {
      std::vector<float> row(n);
      std::memcpy(row.data(), m.data().data() + r * n * sizeof(float),
                  n * sizeof(float));  // little-endian hosts only
      rows.push_back(row);
    }
    maps.push_back(
        {{"layer", m.layer()}, {"head", m.head()}, {"attention", rows}});
  }
  json out{{"model", response.model()},
           {"granularity", args.Has("word") ? "word" : "token"},
           {"tokens", tokens},
           {"units", units},
           {"size", n},
           {"truncated", response.truncated()},
           {"maps", maps}};
  if (response.has_prediction()) {
    const v1::Prediction& p = response.prediction();
    out["prediction"] = {
        {"label", p.label()},
        {"label_name", p.label_name()},
        {"probabilities", std::vector<float>(p.probabilities().begin(),
                                             p.probabilities().end())}};
  }
  const std::string text = out.dump() + "\n";
  if (args.Has("out")) {
    std::ofstream file(args.Get("out"));
    file << text;
    if (!file.good()) {
      return Fail(
          "attention", kExitData,
          absl::DataLossError(absl::StrCat("cannot write ", args.Get("out"))));
    }
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return kExitOk;
}

}  // namespace client
}  // namespace bertology
