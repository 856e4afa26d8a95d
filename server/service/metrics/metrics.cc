#include "server/service/metrics/metrics.h"

#include <dirent.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/service/metrics/metrics_http_server.h"

namespace bertology {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

prometheus::MetricFamily Family(std::string name, std::string help,
                                prometheus::MetricType type, double value) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
  return f;
}

class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::StatusOr<ProcessStats> s = ReadProcessStats();
    if (!s.ok()) return {};
    using prometheus::MetricType;
    return {
        Family("process_cpu_seconds_total",
               "Total user and system CPU time spent in seconds.",
               MetricType::Counter, s->cpu_seconds),
        Family("process_resident_memory_bytes",
               "Resident memory size in bytes.", MetricType::Gauge,
               s->resident_bytes),
        Family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
               MetricType::Gauge, s->virtual_bytes),
        Family("process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.",
               MetricType::Gauge, s->start_time_seconds),
        Family("process_open_fds", "Number of open file descriptors.",
               MetricType::Gauge, s->open_fds),
        Family("process_max_fds", "Maximum number of open file descriptors.",
               MetricType::Gauge, s->max_fds),
    };
  }
};

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats() {
  // /proc/self/stat: "pid (comm) state ppid ..."; comm may hold spaces and
  // parentheses, so the fields are counted from the last ')'. After it come
  // field 3 (state) onwards: utime 14, stime 15, starttime 22 (clock ticks
  // since boot), vsize 23 (bytes), rss 24 (pages). See proc(5).
  const std::string stat = ReadFile("/proc/self/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) {
    return absl::UnavailableError("cannot read /proc/self/stat");
  }
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3, so field k is fields[k - 3].
  auto field = [&](int k, double* out) {
    const size_t i = static_cast<size_t>(k - 3);
    return i < fields.size() && absl::SimpleAtod(fields[i], out);
  };
  double utime, stime, starttime, vsize, rss;
  if (!field(14, &utime) || !field(15, &stime) || !field(22, &starttime) ||
      !field(23, &vsize) || !field(24, &rss)) {
    return absl::UnavailableError("cannot parse /proc/self/stat");
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (ticks <= 0 || page <= 0) {
    return absl::UnavailableError("sysconf has no clock tick or page size");
  }
  ProcessStats s;
  s.cpu_seconds = (utime + stime) / ticks;
  s.virtual_bytes = vsize;
  s.resident_bytes = rss * page;
  // Boot time (seconds since the epoch) is the "btime" line of /proc/stat.
  std::istringstream proc_stat(ReadFile("/proc/stat"));
  for (std::string line; std::getline(proc_stat, line);) {
    double btime;
    if (absl::StartsWith(line, "btime ") &&
        absl::SimpleAtod(line.substr(6), &btime)) {
      s.start_time_seconds = btime + starttime / ticks;
    }
  }
  if (DIR* dir = opendir("/proc/self/fd")) {
    int n = 0;
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(dir);
    s.open_fds = n - 1;  // opendir's own descriptor is listed too
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    s.max_fds = limit.rlim_cur == RLIM_INFINITY
                    ? -1
                    : static_cast<double>(limit.rlim_cur);
  }
  return s;
}

std::shared_ptr<prometheus::Collectable> MakeProcessCollector() {
  return std::make_shared<ProcessCollector>();
}

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
  m->batch_splits_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_batch_splits_total")
           .Help(
               "Sweep forward passes that ran out of device memory and ran "
               "again as two halves, by model.")
           .Register(r);
  m->inflight_rows_ =
      &prometheus::BuildGauge()
           .Name("bertology_inflight_rows")
           .Help(
               "(mask, example) rows accepted and not finished: Classify rows "
               "in the batcher plus unscored pairs of running sweeps.")
           .Register(r)
           .Add({});
  m->sweep_pairs_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_pairs_total")
           .Help(
               "(mask, example) pairs planned by sweeps since start, baseline "
               "included (lifetime; for rate()).")
           .Register(r)
           .Add({});
  m->sweep_pairs_done_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_pairs_done_total")
           .Help(
               "(mask, example) pairs really scored by sweeps since start "
               "(lifetime; for rate()). Abandoned pairs are not in it.")
           .Register(r)
           .Add({});
  m->sweep_pairs_abandoned_ =
      &prometheus::BuildCounter()
           .Name("bertology_sweep_pairs_abandoned_total")
           .Help(
               "Planned sweep pairs never scored, by why the call ended: "
               "cancelled (client cancel or deadline) or failed.")
           .Register(r);
  // Both reasons exist from the start, so rate() and alerts see a 0.
  m->sweep_pairs_abandoned_->Add({{"reason", "cancelled"}});
  m->sweep_pairs_abandoned_->Add({{"reason", "failed"}});
  m->sweep_pairs_planned_now_ =
      &prometheus::BuildGauge()
           .Name("bertology_sweep_pairs_planned")
           .Help(
               "(mask, example) pairs planned by the SweepAblation calls "
               "running now, by model; 0 when none runs.")
           .Register(r);
  m->sweep_pairs_scored_now_ =
      &prometheus::BuildGauge()
           .Name("bertology_sweep_pairs_scored")
           .Help(
               "Pairs already scored by the SweepAblation calls running now, "
               "by model; over bertology_sweep_pairs_planned it is their "
               "progress.")
           .Register(r);
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
  m->process_ = MakeProcessCollector();
  if (listen.empty()) return m;
  const ServiceMetrics* self = m.get();
  // The server is a member: it is stopped before the registry goes away.
  ASSIGN_OR_RETURN(m->http_, MetricsHttpServer::Start(
                                 listen, [self] { return self->Render(); }));
  m->port_ = m->http_->port();
  return m;
}

std::string ServiceMetrics::Render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (prometheus::MetricFamily& f : process_->Collect()) {
    families.push_back(std::move(f));
  }
  return prometheus::TextSerializer().Serialize(families);
}

// The HTTP thread renders from registry_ and process_: stop it first.
ServiceMetrics::~ServiceMetrics() { http_.reset(); }

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

void ServiceMetrics::AddBatchSplit(const std::string& model) {
  batch_splits_->Add({{"model", model}}).Increment();
}

void ServiceMetrics::AddMasks(const std::string& model, int n) {
  masks_->Add({{"model", model}}).Increment(n);
}

void ServiceMetrics::AddInflightRows(int64_t delta) {
  if (delta >= 0) {
    inflight_rows_->Increment(static_cast<double>(delta));
  } else {
    inflight_rows_->Decrement(static_cast<double>(-delta));
  }
}

std::unique_ptr<ServiceMetrics::SweepRecorder> ServiceMetrics::StartSweep(
    const std::string& model, int64_t planned) {
  planned = std::max<int64_t>(planned, 0);
  sweep_pairs_->Increment(static_cast<double>(planned));
  sweep_pairs_planned_now_->Add({{"model", model}})
      .Increment(static_cast<double>(planned));
  // Created now, so a running sweep shows "scored 0" rather than nothing.
  sweep_pairs_scored_now_->Add({{"model", model}});
  sweeps_active_->Increment();
  AddInflightRows(planned);
  return std::unique_ptr<SweepRecorder>(
      new SweepRecorder(this, model, planned));
}

ServiceMetrics::SweepRecorder::SweepRecorder(ServiceMetrics* metrics,
                                             std::string model, int64_t planned)
    : metrics_(metrics), model_(std::move(model)), planned_(planned) {}

void ServiceMetrics::SweepRecorder::AddScored(int64_t n) {
  n = std::clamp<int64_t>(n, 0, planned_ - scored_);
  if (n == 0) return;
  scored_ += n;
  metrics_->sweep_pairs_done_->Increment(static_cast<double>(n));
  metrics_->sweep_pairs_scored_now_->Add({{"model", model_}})
      .Increment(static_cast<double>(n));
  metrics_->AddInflightRows(-n);
}

void ServiceMetrics::SweepRecorder::Finish(const absl::Status& status) {
  if (finished_) return;
  finished_ = true;
  const int64_t left = planned_ - scored_;
  if (left <= 0) return;
  const bool cancelled =
      absl::IsCancelled(status) || absl::IsDeadlineExceeded(status);
  metrics_->sweep_pairs_abandoned_
      ->Add({{"reason", cancelled ? "cancelled" : "failed"}})
      .Increment(static_cast<double>(left));
}

ServiceMetrics::SweepRecorder::~SweepRecorder() {
  Finish(absl::InternalError("the sweep ended without a status"));
  // Take back this call's share of the gauges of running sweeps.
  metrics_->sweep_pairs_planned_now_->Add({{"model", model_}})
      .Decrement(static_cast<double>(planned_));
  metrics_->sweep_pairs_scored_now_->Add({{"model", model_}})
      .Decrement(static_cast<double>(scored_));
  metrics_->sweeps_active_->Decrement();
  metrics_->AddInflightRows(-(planned_ - scored_));
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
