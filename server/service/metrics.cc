#include "server/service/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/core/status_macros.h"
#include "server/service/metrics_http_server.h"

namespace bertology {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServiceMetrics>> ServiceMetrics::Create(
    const std::string& listen) {
  std::unique_ptr<ServiceMetrics> m(new ServiceMetrics());
  m->registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *m->registry_;
  m->requests_ = &prometheus::BuildCounter()
                      .Name("bertology_requests_total")
                      .Help("Finished RPCs by method and gRPC status code.")
                      .Register(r);
  m->duration_ = &prometheus::BuildHistogram()
                      .Name("bertology_request_duration_seconds")
                      .Help("RPC latency, from arrival to status, by method.")
                      .Register(r);
  m->inflight_ = &prometheus::BuildGauge()
                      .Name("bertology_inflight_requests")
                      .Help("RPCs being handled now.")
                      .Register(r)
                      .Add({});
  m->batch_size_ = &prometheus::BuildHistogram()
                        .Name("bertology_batch_size")
                        .Help("Rows per batched Classify forward pass.")
                        .Register(r)
                        .Add({}, prometheus::Histogram::BucketBoundaries{
                                     1, 2, 4, 8, 16, 32, 64, 128, 256});
  m->queue_wait_ = &prometheus::BuildHistogram()
                        .Name("bertology_queue_wait_seconds")
                        .Help("Time a Classify row waited in the batch queue.")
                        .Register(r)
                        .Add({}, LatencyBuckets());
  m->examples_ = &prometheus::BuildCounter()
                      .Name("bertology_examples_processed_total")
                      .Help("Classify inputs scored, by model.")
                      .Register(r);
  m->masks_ = &prometheus::BuildCounter()
                   .Name("bertology_masks_processed_total")
                   .Help("Sweep masks fully scored, by model.")
                   .Register(r);
  m->sweep_pairs_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_pairs_total")
           .Help("(mask, example) pairs planned by sweeps, baseline included.")
           .Register(r)
           .Add({});
  m->sweep_pairs_done_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_pairs_done_total")
           .Help(
               "(mask, example) pairs scored by sweeps; divided by "
               "bertology_sweep_pairs_total it is the sweep progress.")
           .Register(r)
           .Add({});
  m->sweeps_active_ = &prometheus::BuildGauge()
                           .Name("bertology_sweeps_active")
                           .Help("SweepAblation calls running now.")
                           .Register(r)
                           .Add({});
  m->model_info_ = &prometheus::BuildGauge()
                        .Name("bertology_model_info")
                        .Help(
                            "Loaded models (value 1), with their shape, "
                            "device and dtype as labels.")
                        .Register(r);
  if (listen.empty()) return m;
  std::shared_ptr<prometheus::Registry> registry = m->registry_;
  ASSIGN_OR_RETURN(
      m->http_, MetricsHttpServer::Start(listen, [registry] {
        return prometheus::TextSerializer().Serialize(registry->Collect());
      }));
  m->port_ = m->http_->port();
  return m;
}

ServiceMetrics::~ServiceMetrics() = default;

void ServiceMetrics::RecordRequest(const std::string& method,
                                   const std::string& code,
                                   absl::Duration duration) {
  requests_->Add({{"method", method}, {"code", code}}).Increment();
  duration_->Add({{"method", method}}, LatencyBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void ServiceMetrics::AddInflight(int delta) {
  if (delta >= 0) {
    inflight_->Increment(delta);
  } else {
    inflight_->Decrement(-delta);
  }
}

void ServiceMetrics::RecordBatch(int rows,
                                 const std::vector<absl::Duration>& waits) {
  batch_size_->Observe(rows);
  for (absl::Duration wait : waits) {
    queue_wait_->Observe(absl::ToDoubleSeconds(wait));
  }
}

void ServiceMetrics::AddExamples(const std::string& model, int n) {
  examples_->Add({{"model", model}}).Increment(n);
}

void ServiceMetrics::AddMasks(const std::string& model, int n) {
  masks_->Add({{"model", model}}).Increment(n);
}

void ServiceMetrics::AddSweepPairsPlanned(int64_t n) {
  sweep_pairs_->Increment(static_cast<double>(n));
}

void ServiceMetrics::AddSweepPairsDone(int64_t n) {
  sweep_pairs_done_->Increment(static_cast<double>(n));
}

void ServiceMetrics::AddActiveSweeps(int delta) {
  if (delta >= 0) {
    sweeps_active_->Increment(delta);
  } else {
    sweeps_active_->Decrement(-delta);
  }
}

void ServiceMetrics::SetModelInfo(const ModelInfoLabels& l) {
  model_info_
      ->Add({{"model", l.model},
             {"device", l.device},
             {"dtype", l.dtype},
             {"layers", l.layers},
             {"heads", l.heads}})
      .Set(1);
}

}  // namespace bertology
