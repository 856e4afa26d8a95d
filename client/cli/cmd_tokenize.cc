// `bertology tokenize`: the word pieces of a text or pair.
#include <cstdio>

#include "client/cli/commands.h"
#include "client/cli/connection.h"
#include "client/cli/exit_codes.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace client {

absl::Status RunTokenize(const Argv& argv) {
  std::vector<FlagSpec> flags = ConnectionFlags();
  flags.push_back({"text-a", true, "the text (or first positional)", "TEXT"});
  flags.push_back({"text-b", true, "second text of a pair", "TEXT"});
  flags.push_back({"json", false, "JSON instead of a table"});
  ASSIGN_OR_RETURN(
      Args args,
      ParseCommandArgs(
          "Usage: bertology tokenize --text-a=TEXT [--text-b=TEXT]\n"
          "Prints one word piece a line: index, piece, id, segment, word, "
          "char span.",
          flags, argv));
  const auto& pos = args.positional();
  const std::string a = args.Get("text-a", pos.size() > 0 ? pos[0] : "");
  const std::string b = args.Get("text-b", pos.size() > 1 ? pos[1] : "");
  if (a.empty()) {
    return CommandError(kExitUsage,
                        absl::InvalidArgumentError("--text-a is required"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<v1::Bertology::Stub> stub,
                   ConnectStub(args));
  ASSIGN_OR_RETURN(std::unique_ptr<grpc::ClientContext> context,
                   CallContext(args));
  v1::TokenizeRequest request;
  request.set_model(args.Get("model"));
  request.set_text_a(a);
  request.set_text_b(b);
  v1::TokenizeResponse response;
  absl::Status s =
      FromGrpcStatus(stub->Tokenize(context.get(), request, &response));
  if (!s.ok()) return CommandError(kExitRpc, s);
  if (args.Has("json")) {
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
    std::printf("%s\n", nlohmann::json{{"tokens", tokens},
                                       {"truncated", response.truncated()},
                                       {"num_words", response.num_words()}}
                            .dump(2)
                            .c_str());
    return absl::OkStatus();
  }
  std::printf("index\tpiece\tid\tsegment\tword\tchars\n");
  for (int i = 0; i < response.tokens_size(); ++i) {
    const v1::Token& t = response.tokens(i);
    std::printf("%d\t%s\t%d\t%d\t%d\t%d-%d\n", i, t.text().c_str(), t.id(),
                t.segment(), t.word_index(), t.char_start(), t.char_end());
  }
  if (response.truncated()) std::fprintf(stderr, "(truncated)\n");
  return absl::OkStatus();
}

}  // namespace client
}  // namespace bertology
