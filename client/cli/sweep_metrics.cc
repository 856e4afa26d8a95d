#include "client/cli/sweep_metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace client {

absl::StatusOr<std::unique_ptr<SweepMetricsExporter>>
SweepMetricsExporter::Start(const std::string& listen,
                            std::map<std::string, std::string> labels) {
  const std::string flag = absl::StrCat("--metrics-listen=", listen);
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " is not HOST:PORT with PORT in [0, 65535]"));
  }
  const std::string host = listen.substr(0, colon);
  if (!host.empty() && host.front() == '[') {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": IPv6 addresses are not supported by this exporter"));
  }
  // civetweb's form: "PORT" listens on all interfaces.
  const std::string bind =
      host.empty() ? absl::StrCat(port) : absl::StrCat(host, ":", port);

  std::unique_ptr<SweepMetricsExporter> e(new SweepMetricsExporter());
  e->registry_ = std::make_shared<prometheus::Registry>();
  // prometheus-cpp reports a bad label name and a failed bind by throwing.
  try {
    const prometheus::Labels constant(labels.begin(), labels.end());
    auto gauge = [&](const char* name, const char* help) {
      return &prometheus::BuildGauge()
                  .Name(name)
                  .Help(help)
                  .Register(*e->registry_)
                  .Add(constant);
    };
    e->pairs_done_ = gauge("bertology_sweep_job_pairs_done",
                           "(mask, example) pairs this sweep run has done, "
                           "resumed and partial shards included.");
    e->pairs_total_ = gauge("bertology_sweep_job_pairs_total",
                            "(mask, example) pairs this sweep run is to do.");
    e->shards_done_ = gauge("bertology_sweep_job_shards_done",
                            "Shards finished, resumed ones included.");
    e->shards_total_ =
        gauge("bertology_sweep_job_shards_total", "Shards of this run.");
    e->shards_resumed_ = gauge("bertology_sweep_job_shards_resumed",
                               "Shards taken from progress files.");
    e->retries_ = gauge("bertology_sweep_job_retries",
                        "Shard attempts retried so far in this run.");
    e->inflight_ = gauge("bertology_sweep_job_inflight_shards",
                         "Shard calls in flight now.");
    e->replicas_ = gauge("bertology_sweep_job_replicas",
                         "Server channels (replicas) in use now.");
  } catch (const std::exception& ex) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep metrics labels: ", ex.what()));
  }
  try {
    e->exposer_ = std::make_unique<prometheus::Exposer>(bind, 1);
  } catch (const std::exception& ex) {
    return absl::UnavailableError(
        absl::StrCat(flag, ": cannot listen: ", ex.what()));
  }
  e->exposer_->RegisterCollectable(e->registry_);
  const std::vector<int> ports = e->exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat(flag, ": the exporter reports no listening port"));
  }
  e->port_ = ports.front();
  return e;
}

// The exposer (its civetweb threads) goes first: it reads the registry.
SweepMetricsExporter::~SweepMetricsExporter() { exposer_.reset(); }

void SweepMetricsExporter::Update(const SweepProgressSnapshot& s) {
  pairs_done_->Set(static_cast<double>(s.pairs_done));
  pairs_total_->Set(static_cast<double>(s.pairs_total));
  shards_done_->Set(s.shards_done);
  shards_total_->Set(s.shards_total);
  shards_resumed_->Set(s.shards_resumed);
  retries_->Set(s.retries);
  inflight_->Set(s.inflight);
  replicas_->Set(s.replicas);
}

}  // namespace client
}  // namespace bertology
