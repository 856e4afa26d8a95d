// The RPC handlers: one function per RPC, each in its own .cc, working in
// absl::Status. bertology_service.cc wraps them with metrics, exception
// catching and the one conversion to grpc::Status.
#ifndef BERTOLOGY_SERVICE_HANDLERS_H_
#define BERTOLOGY_SERVICE_HANDLERS_H_

#include <functional>

#include "absl/status/status.h"
#include "bertology/v1/bertology.pb.h"
#include "server/service/reference_store.h"
#include "server/service/service_limits.h"

namespace bertology {

class ModelRegistry;
class ServiceMetrics;

// What every handler may use; all pointers outlive the server.
struct HandlerContext {
  const ModelRegistry* models = nullptr;
  const ServiceLimits* limits = nullptr;
  ServiceMetrics* metrics = nullptr;
};

absl::Status HandleGetModelInfo(const HandlerContext& ctx,
                                const v1::GetModelInfoRequest& request,
                                v1::GetModelInfoResponse* response);

absl::Status HandleTokenize(const HandlerContext& ctx,
                            const v1::TokenizeRequest& request,
                            v1::TokenizeResponse* response);

// Waits for the batcher to score the inputs.
absl::Status HandleClassify(const HandlerContext& ctx,
                            const v1::ClassifyRequest& request,
                            v1::ClassifyResponse* response);

absl::Status HandleGetAttention(const HandlerContext& ctx,
                                const v1::GetAttentionRequest& request,
                                v1::GetAttentionResponse* response);

// The transport side of a server stream, as functions so the handler knows
// no gRPC. `write` sends one event (false: the client is gone);
// `is_cancelled` is polled between forward passes (client cancel, deadline).
template <typename Event>
struct EventStream {
  std::function<bool(const Event&)> write;
  std::function<bool()> is_cancelled;
};
using SweepStream = EventStream<v1::SweepAblationResponse>;

absl::Status HandleSweepAblation(const HandlerContext& ctx,
                                 const v1::SweepAblationRequest& request,
                                 const SweepStream& stream);

absl::Status HandleAnalyzeHeads(
    const HandlerContext& ctx, const v1::AnalyzeHeadsRequest& request,
    const EventStream<v1::AnalyzeHeadsResponse>& stream);

absl::Status HandleHeadImportance(
    const HandlerContext& ctx, const v1::HeadImportanceRequest& request,
    const EventStream<v1::HeadImportanceResponse>& stream);

absl::Status HandlePruneCurve(
    const HandlerContext& ctx, const v1::PruneCurveRequest& request,
    const EventStream<v1::PruneCurveResponse>& stream);

absl::Status HandleCompareAttention(
    const HandlerContext& ctx, const v1::CompareAttentionRequest& request,
    const EventStream<v1::CompareAttentionResponse>& stream);

absl::Status HandleSegmentWords(
    const HandlerContext& ctx, const v1::SegmentWordsRequest& request,
    const EventStream<v1::SegmentWordsResponse>& stream);

absl::Status HandleComputeHeadStatistics(
    const HandlerContext& ctx, const v1::ComputeHeadStatisticsRequest& request,
    v1::ComputeHeadStatisticsResponse* response);
// GetModelInfo lists the statistics as ComputeHeadStatistics returns them.
void FillReferenceStatistics(const ReferenceStore::Info& info,
                             v1::ReferenceStatistics* out);

absl::Status HandlePatch(const HandlerContext& ctx,
                         const v1::PatchRequest& request,
                         const EventStream<v1::PatchResponse>& stream);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_HANDLERS_H_
