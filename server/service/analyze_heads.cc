// AnalyzeHeads: PLACEHOLDER until the handler lands (returns UNIMPLEMENTED).
#include "absl/status/status.h"
#include "server/service/handlers.h"

namespace bertology {

absl::Status HandleAnalyzeHeads(const HandlerContext&,
                                const v1::AnalyzeHeadsRequest&,
                                const EventStream<v1::AnalyzeHeadsResponse>&) {
  return absl::UnimplementedError("AnalyzeHeads is not implemented yet");
}

}  // namespace bertology
