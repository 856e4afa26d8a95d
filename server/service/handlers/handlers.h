// The RPC handlers: one function per RPC, each in its own .cc, working in
// absl::Status. bertology_service.cc wraps them with metrics, exception
// catching and the one conversion to grpc::Status.
#ifndef BERTOLOGY_SERVICE_HANDLERS_HANDLERS_H_
#define BERTOLOGY_SERVICE_HANDLERS_HANDLERS_H_

#include "absl/status/status.h"
#include "bertology/v1/bertology.pb.h"
#include "server/service/registry/reference_store.h"
#include "server/service/registry/service_limits.h"
#include "server/service/streaming/streaming_call.h"

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

absl::Status HandleAttribute(const HandlerContext& ctx,
                             const v1::AttributeRequest& request,
                             const EventStream<v1::AttributeResponse>& stream);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_HANDLERS_HANDLERS_H_
