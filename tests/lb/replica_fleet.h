// Test helpers for the multi-replica tests: N bertology-server replicas of
// the golden model, a labelled dataset for it, the reference single-call
// sweep, and metrics scraping.
#ifndef BERTOLOGY_TESTS_LB_REPLICA_FLEET_H_
#define BERTOLOGY_TESTS_LB_REPLICA_FLEET_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/scheduler/sweep_scheduler.h"
#include "tests/integration/server_process.h"

namespace bertology {
namespace testing {

// Starts `n` replicas and waits until each is SERVING; `metrics`: with a
// /metrics endpoint (else --metrics_listen= disables it).
absl::StatusOr<std::vector<std::unique_ptr<ServerProcess>>> StartReplicas(
    int n, bool metrics = false);

// "ipv4:127.0.0.1:A,127.0.0.1:B,..."
std::string TargetList(
    const std::vector<std::unique_ptr<ServerProcess>>& replicas);

// `n` deterministic labelled examples for the 3-label golden model.
std::vector<v1::LabeledExample> Examples(int n);

// Every head, every layer, 6 random 25% masks, one keep-only.
std::vector<v1::MaskSpec> SweepSpecs();

// The scheduler's job for `specs` on the golden model (3 x 4 heads).
client::SweepJob Job(const std::vector<v1::LabeledExample>& examples,
                     const std::vector<v1::MaskSpec>& specs = SweepSpecs());

// mask id -> (examples, correct, ablated) from one unsharded SweepAblation
// call with the generator specs as the server expands them.
struct Reference {
  int64_t examples = 0;
  int64_t correct = 0;
  std::vector<std::pair<int, int>> ablated;
};
absl::StatusOr<std::map<std::string, Reference>> SingleCallSweep(
    const ServerProcess& server, const std::vector<v1::LabeledExample>& ex,
    const std::vector<v1::MaskSpec>& specs = SweepSpecs());

// Checks a merged sweep against the single call: same ids in the same
// order, equal counts, ablated heads and accuracy. Returns "" when equal.
std::string CompareWithSingleCall(
    const client::SweepSummary& merged,
    const std::map<std::string, Reference>& reference);

// The sum of the samples of metric `name` whose labels include every one of
// `labels` (name="value" pairs) in a Prometheus text scrape; 0 if none.
double MetricValue(
    const std::string& metrics, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& labels = {});

// The value of bertology_requests_total{method=M, code="OK"} (0 if absent).
double OkRequests(const std::string& metrics, const std::string& method);

}  // namespace testing
}  // namespace bertology

#endif  // BERTOLOGY_TESTS_LB_REPLICA_FLEET_H_
