// The gRPC face of the handlers: the generated bertology.v1.Bertology
// service, one method per RPC. Each method checks the caller (Authorizer),
// counts itself in the metrics, catches any exception (a handler bug must
// not take the server down) and converts the handler's absl::Status through
// ToGrpcStatus().
//
// Thread-safe: the sync server calls it from many threads at once.
#ifndef BERTOLOGY_SERVICE_RPC_BERTOLOGY_SERVICE_H_
#define BERTOLOGY_SERVICE_RPC_BERTOLOGY_SERVICE_H_

#include "bertology/v1/bertology.grpc.pb.h"
#include "server/service/handlers/handlers.h"
#include "server/service/security/authorizer.h"

namespace bertology {

class BertologyService final : public v1::Bertology::Service {
 public:
  // `authorizer` (may be null: every caller allowed) outlives the service.
  BertologyService(HandlerContext ctx, const Authorizer* authorizer)
      : ctx_(ctx), authorizer_(authorizer) {}

  grpc::Status GetModelInfo(grpc::ServerContext* context,
                            const v1::GetModelInfoRequest* request,
                            v1::GetModelInfoResponse* response) override;
  grpc::Status Tokenize(grpc::ServerContext* context,
                        const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status Classify(grpc::ServerContext* context,
                        const v1::ClassifyRequest* request,
                        v1::ClassifyResponse* response) override;
  grpc::Status GetAttention(grpc::ServerContext* context,
                            const v1::GetAttentionRequest* request,
                            v1::GetAttentionResponse* response) override;
  grpc::Status SweepAblation(
      grpc::ServerContext* context, const v1::SweepAblationRequest* request,
      grpc::ServerWriter<v1::SweepAblationResponse>* writer) override;
  grpc::Status AnalyzeHeads(
      grpc::ServerContext* context, const v1::AnalyzeHeadsRequest* request,
      grpc::ServerWriter<v1::AnalyzeHeadsResponse>* writer) override;
  grpc::Status HeadImportance(
      grpc::ServerContext* context, const v1::HeadImportanceRequest* request,
      grpc::ServerWriter<v1::HeadImportanceResponse>* writer) override;
  grpc::Status PruneCurve(
      grpc::ServerContext* context, const v1::PruneCurveRequest* request,
      grpc::ServerWriter<v1::PruneCurveResponse>* writer) override;
  grpc::Status CompareAttention(
      grpc::ServerContext* context, const v1::CompareAttentionRequest* request,
      grpc::ServerWriter<v1::CompareAttentionResponse>* writer) override;
  grpc::Status SegmentWords(
      grpc::ServerContext* context, const v1::SegmentWordsRequest* request,
      grpc::ServerWriter<v1::SegmentWordsResponse>* writer) override;
  grpc::Status ComputeHeadStatistics(
      grpc::ServerContext* context,
      const v1::ComputeHeadStatisticsRequest* request,
      v1::ComputeHeadStatisticsResponse* response) override;
  grpc::Status Patch(grpc::ServerContext* context,
                     const v1::PatchRequest* request,
                     grpc::ServerWriter<v1::PatchResponse>* writer) override;
  grpc::Status Attribute(
      grpc::ServerContext* context, const v1::AttributeRequest* request,
      grpc::ServerWriter<v1::AttributeResponse>* writer) override;

 private:
  HandlerContext ctx_;
  const Authorizer* authorizer_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_RPC_BERTOLOGY_SERVICE_H_
