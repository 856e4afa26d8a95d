// HeadImportance and PruneCurve: PLACEHOLDER until the handlers land
// (return UNIMPLEMENTED).
#include "absl/status/status.h"
#include "server/service/handlers.h"

namespace bertology {

absl::Status HandleHeadImportance(
    const HandlerContext&, const v1::HeadImportanceRequest&,
    const EventStream<v1::HeadImportanceResponse>&) {
  return absl::UnimplementedError("HeadImportance is not implemented yet");
}

absl::Status HandlePruneCurve(const HandlerContext&,
                              const v1::PruneCurveRequest&,
                              const EventStream<v1::PruneCurveResponse>&) {
  return absl::UnimplementedError("PruneCurve is not implemented yet");
}

}  // namespace bertology
