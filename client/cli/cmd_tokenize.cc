// `bertology tokenize`: the word pieces of a text or pair.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/cli/command_output.h"
#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

namespace {

constexpr char kUsage[] =
    "Usage: bertology tokenize --text-a=TEXT [--text-b=TEXT]\n"
    "Prints one word piece a line: index, piece, id, segment, word, "
    "char span.";

std::vector<FlagSpec> TokenizeFlags() {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"text-a", true, "the text (or first positional)", "TEXT"});
  flags.push_back({"text-b", true, "second text of a pair", "TEXT"});
  flags.push_back({"json", false, "JSON instead of a table"});
  return flags;
}

// The request from the flags; kExitUsage errors.
absl::StatusOr<v1::TokenizeRequest> BuildTokenizeRequest(const Args& args) {
  const auto& pos = args.positional();
  v1::TokenizeRequest request;
  request.set_model(args.Get("model"));
  request.set_text_a(args.Get("text-a", pos.size() > 0 ? pos[0] : ""));
  request.set_text_b(args.Get("text-b", pos.size() > 1 ? pos[1] : ""));
  if (request.text_a().empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("--text-a is required"));
  }
  return request;
}

// One line per piece (a truncation noted on stderr), or JSON.
CommandOutput TokenizeOutput(bool json, const v1::TokenizeResponse& response) {
  CommandOutput out;
  if (json) {
    nlohmann::json tokens = nlohmann::json::array();
    for (const v1::Token& t : response.tokens()) {
      tokens.push_back({{"text", t.text()},
                        {"id", t.id()},
                        {"segment", t.segment()},
                        {"word", t.word_index()},
                        {"char_start", t.char_start()},
                        {"char_end", t.char_end()},
                        {"special", t.special()}});
    }
    out.stdout_text = nlohmann::json{{"tokens", tokens},
                                     {"truncated", response.truncated()},
                                     {"num_words", response.num_words()}}
                          .dump(2) +
                      "\n";
    return out;
  }
  out.stdout_text = "index\tpiece\tid\tsegment\tword\tchars\n";
  for (int i = 0; i < response.tokens_size(); ++i) {
    const v1::Token& t = response.tokens(i);
    absl::StrAppend(&out.stdout_text, i, "\t", t.text(), "\t", t.id(), "\t",
                    t.segment(), "\t", t.word_index(), "\t", t.char_start(),
                    "-", t.char_end(), "\n");
  }
  if (response.truncated()) out.stderr_text = "(truncated)\n";
  return out;
}

}  // namespace

absl::Status RunTokenize(const Argv& argv) {
  ASSIGN_OR_RETURN(Args args, ParseCommandArgs(kUsage, TokenizeFlags(), argv));
  ASSIGN_OR_RETURN(const v1::TokenizeRequest request,
                   BuildTokenizeRequest(args));
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args));
  v1::TokenizeResponse response;
  absl::Status s =
      FromGrpcStatus(stub->Tokenize(context.get(), request, &response));
  if (!s.ok()) return CommandError(kExitRpc, s);
  return EmitOutput(TokenizeOutput(args.Has("json"), response));
}

}  // namespace client
}  // namespace bertology
