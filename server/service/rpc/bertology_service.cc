#include "server/service/rpc/bertology_service.h"

#include <grpc/grpc_security_constants.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "server/service/metrics/metrics.h"
#include "server/service/security/authorizer.h"

namespace bertology {
namespace {

bool DeadlinePassed(const grpc::ServerContext& context) {
  return context.deadline() <= std::chrono::system_clock::now();
}

// What the transport knows of the caller: a verified client certificate
// (with --tls_client_ca the handshake refuses unverifiable ones, so one
// that is present was verified) and the `authorization` metadata.
CallCredentials CredentialsOf(const grpc::ServerContext& context) {
  CallCredentials credentials;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  credentials.client_cert_verified =
      auth != nullptr && auth->IsPeerAuthenticated() &&
      !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it != metadata.end()) {
    credentials.authorization =
        std::string(it->second.data(), it->second.size());
  }
  return credentials;
}

// Runs `handler` as RPC `method`: authorization, in-flight gauge, exception
// boundary, deadline-vs-cancel distinction, status conversion, request
// metrics (refused calls are counted under their code too).
template <typename Handler>
grpc::Status Serve(ServiceMetrics* metrics, const Authorizer* authorizer,
                   const std::string& method,
                   const grpc::ServerContext& context, Handler&& handler) {
  const absl::Time start = absl::Now();
  metrics->AddInflight(1);
  absl::Status status;
  try {
    if (authorizer != nullptr) {
      status = authorizer->Check(method, CredentialsOf(context));
    }
    if (status.ok()) status = handler();
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
  return Serve(ctx_.metrics, authorizer_, "GetModelInfo", *context,
               [&] { return HandleGetModelInfo(ctx_, *request, response); });
}

grpc::Status BertologyService::Tokenize(grpc::ServerContext* context,
                                        const v1::TokenizeRequest* request,
                                        v1::TokenizeResponse* response) {
  return Serve(ctx_.metrics, authorizer_, "Tokenize", *context,
               [&] { return HandleTokenize(ctx_, *request, response); });
}

grpc::Status BertologyService::Classify(grpc::ServerContext* context,
                                        const v1::ClassifyRequest* request,
                                        v1::ClassifyResponse* response) {
  return Serve(ctx_.metrics, authorizer_, "Classify", *context,
               [&] { return HandleClassify(ctx_, *request, response); });
}

grpc::Status BertologyService::GetAttention(
    grpc::ServerContext* context, const v1::GetAttentionRequest* request,
    v1::GetAttentionResponse* response) {
  return Serve(ctx_.metrics, authorizer_, "GetAttention", *context,
               [&] { return HandleGetAttention(ctx_, *request, response); });
}

grpc::Status BertologyService::SweepAblation(
    grpc::ServerContext* context, const v1::SweepAblationRequest* request,
    grpc::ServerWriter<v1::SweepAblationResponse>* writer) {
  const SweepStream stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "SweepAblation", *context,
               [&] { return HandleSweepAblation(ctx_, *request, stream); });
}

grpc::Status BertologyService::AnalyzeHeads(
    grpc::ServerContext* context, const v1::AnalyzeHeadsRequest* request,
    grpc::ServerWriter<v1::AnalyzeHeadsResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "AnalyzeHeads", *context,
               [&] { return HandleAnalyzeHeads(ctx_, *request, stream); });
}

grpc::Status BertologyService::HeadImportance(
    grpc::ServerContext* context, const v1::HeadImportanceRequest* request,
    grpc::ServerWriter<v1::HeadImportanceResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "HeadImportance", *context,
               [&] { return HandleHeadImportance(ctx_, *request, stream); });
}

grpc::Status BertologyService::PruneCurve(
    grpc::ServerContext* context, const v1::PruneCurveRequest* request,
    grpc::ServerWriter<v1::PruneCurveResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "PruneCurve", *context,
               [&] { return HandlePruneCurve(ctx_, *request, stream); });
}

grpc::Status BertologyService::CompareAttention(
    grpc::ServerContext* context, const v1::CompareAttentionRequest* request,
    grpc::ServerWriter<v1::CompareAttentionResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "CompareAttention", *context,
               [&] { return HandleCompareAttention(ctx_, *request, stream); });
}

grpc::Status BertologyService::SegmentWords(
    grpc::ServerContext* context, const v1::SegmentWordsRequest* request,
    grpc::ServerWriter<v1::SegmentWordsResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "SegmentWords", *context,
               [&] { return HandleSegmentWords(ctx_, *request, stream); });
}

grpc::Status BertologyService::ComputeHeadStatistics(
    grpc::ServerContext* context,
    const v1::ComputeHeadStatisticsRequest* request,
    v1::ComputeHeadStatisticsResponse* response) {
  return Serve(
      ctx_.metrics, authorizer_, "ComputeHeadStatistics", *context,
      [&] { return HandleComputeHeadStatistics(ctx_, *request, response); });
}

grpc::Status BertologyService::Patch(
    grpc::ServerContext* context, const v1::PatchRequest* request,
    grpc::ServerWriter<v1::PatchResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "Patch", *context,
               [&] { return HandlePatch(ctx_, *request, stream); });
}

grpc::Status BertologyService::Attribute(
    grpc::ServerContext* context, const v1::AttributeRequest* request,
    grpc::ServerWriter<v1::AttributeResponse>* writer) {
  const auto stream = StreamOf(context, writer);
  return Serve(ctx_.metrics, authorizer_, "Attribute", *context,
               [&] { return HandleAttribute(ctx_, *request, stream); });
}

}  // namespace bertology
