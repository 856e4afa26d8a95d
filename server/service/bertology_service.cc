#include "server/service/bertology_service.h"

#include <chrono>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "server/service/metrics.h"

namespace bertology {
namespace {

bool DeadlinePassed(const grpc::ServerContext& context) {
  return context.deadline() <= std::chrono::system_clock::now();
}

// Runs `handler` as RPC `method`: in-flight gauge, exception boundary,
// deadline-vs-cancel distinction, status conversion, request metrics.
template <typename Handler>
grpc::Status Serve(ServiceMetrics* metrics, const std::string& method,
                   const grpc::ServerContext& context, Handler&& handler) {
  const absl::Time start = absl::Now();
  metrics->AddInflight(1);
  absl::Status status;
  try {
    status = handler();
  } catch (const std::exception& e) {
    status = absl::InternalError(
        absl::StrCat(method, ": unexpected exception: ", e.what()));
  } catch (...) {
    status = absl::InternalError(
        absl::StrCat(method, ": unexpected non-standard exception"));
  }
  if (absl::IsCancelled(status) && DeadlinePassed(context)) {
    status = absl::DeadlineExceededError(
        absl::StrCat("deadline exceeded: ", status.message()));
  }
  grpc::Status out = ToGrpcStatus(status);
  metrics->RecordRequest(method, GrpcCodeName(out.error_code()),
                         absl::Now() - start);
  metrics->AddInflight(-1);
  return out;
}

// The handler's stream over the gRPC writer and context.
template <typename Event>
EventStream<Event> StreamOf(grpc::ServerContext* context,
                            grpc::ServerWriter<Event>* writer) {
  EventStream<Event> stream;
  stream.write = [writer](const Event& event) { return writer->Write(event); };
  stream.is_cancelled = [context] {
    return context->IsCancelled() || DeadlinePassed(*context);
  };
  return stream;
}

}  // namespace

grpc::Status BertologyService::GetModelInfo(
    grpc::ServerContext* context, const v1::GetModelInfoRequest* request,
    v1::GetModelInfoResponse* response) {
  return Serve(ctx_.metrics, "GetModelInfo", *context,
               [&] { return HandleGetModelInfo(ctx_, *request, response); });
}

grpc::Status BertologyService::Tokenize(grpc::ServerContext* context,
                                        const v1::TokenizeRequest* request,
                                        v1::TokenizeResponse* response) {
  return Serve(ctx_.metrics, "Tokenize", *context,
               [&] { return HandleTokenize(ctx_, *request, response); });
}

grpc::Status BertologyService::Classify(grpc::ServerContext* context,
                                        const v1::ClassifyRequest* request,
                                        v1::ClassifyResponse* response) {
  return Serve(ctx_.metrics, "Classify", *context,
               [&] { return HandleClassify(ctx_, *request, response); });
}

grpc::Status BertologyService::GetAttention(
    grpc::ServerContext* context, const v1::GetAttentionRequest* request,
    v1::GetAttentionResponse* response) {
  return Serve(ctx_.metrics, "GetAttention", *context,
               [&] { return HandleGetAttention(ctx_, *request, response); });
}

grpc::Status BertologyService::SweepAblation(
    grpc::ServerContext* context, const v1::SweepAblationRequest* request,
    grpc::ServerWriter<v1::SweepAblationResponse>* writer) {
  const SweepStream stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "SweepAblation", *context,
               [&] { return HandleSweepAblation(ctx_, *request, stream); });
}

grpc::Status BertologyService::AnalyzeHeads(
    grpc::ServerContext* context, const v1::AnalyzeHeadsRequest* request,
    grpc::ServerWriter<v1::AnalyzeHeadsResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "AnalyzeHeads", *context,
               [&] { return HandleAnalyzeHeads(ctx_, *request, stream); });
}

grpc::Status BertologyService::HeadImportance(
    grpc::ServerContext* context, const v1::HeadImportanceRequest* request,
    grpc::ServerWriter<v1::HeadImportanceResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "HeadImportance", *context,
               [&] { return HandleHeadImportance(ctx_, *request, stream); });
}

grpc::Status BertologyService::PruneCurve(
    grpc::ServerContext* context, const v1::PruneCurveRequest* request,
    grpc::ServerWriter<v1::PruneCurveResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "PruneCurve", *context,
               [&] { return HandlePruneCurve(ctx_, *request, stream); });
}

grpc::Status BertologyService::CompareAttention(
    grpc::ServerContext* context, const v1::CompareAttentionRequest* request,
    grpc::ServerWriter<v1::CompareAttentionResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "CompareAttention", *context,
               [&] { return HandleCompareAttention(ctx_, *request, stream); });
}

grpc::Status BertologyService::SegmentWords(
    grpc::ServerContext* context, const v1::SegmentWordsRequest* request,
    grpc::ServerWriter<v1::SegmentWordsResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, "SegmentWords", *context,
               [&] { return HandleSegmentWords(ctx_, *request, stream); });
}

}  // namespace bertology
