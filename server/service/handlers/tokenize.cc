// Tokenize: the model's own word pieces, with spans and word indices.
#include "absl/status/status.h"
#include "common/status_macros.h"
#include "server/core/model/model.h"
#include "server/service/convert/proto_conversion.h"
#include "server/service/convert/request_validation.h"
#include "server/service/handlers/handlers.h"
#include "server/service/registry/model_registry.h"

namespace bertology {

absl::Status HandleTokenize(const HandlerContext& ctx,
                            const v1::TokenizeRequest& request,
                            v1::TokenizeResponse* response) {
  ASSIGN_OR_RETURN(const ServedModel* served,
                   ctx.models->Find(request.model()));
  const Model& model = *served->model;
  ASSIGN_OR_RETURN(Encoding encoding,
                   EncodeText(model.tokenizer(), model.max_seq_len(),
                              request.text_a(), request.text_b(),
                              /*field=*/"", *ctx.limits));
  for (const Token& token : encoding.tokens) {
    FillToken(token, response->add_tokens());
  }
  response->set_truncated(encoding.truncated);
  response->set_num_words(encoding.num_words);
  return absl::OkStatus();
}

}  // namespace bertology
