#include "tests/lb/replica_fleet.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/scheduler/mask_plan.h"
#include "common/grpc_status.h"

namespace bertology {
namespace testing {

absl::StatusOr<std::vector<std::unique_ptr<ServerProcess>>> StartReplicas(
    int n, bool metrics) {
  std::vector<std::unique_ptr<ServerProcess>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> args = {
        absl::StrCat("--model=tiny=", GoldenModelDir()), "--threads=1",
        "--warmup_passes=0", "--grace_period_s=1"};
    if (!metrics) args.push_back("--metrics_listen=");
    auto p = ServerProcess::Start(args);
    if (!p.ok()) return p.status();
    out.push_back(*std::move(p));
  }
  for (auto& p : out) {
    absl::Status s = p->WaitServing();
    if (!s.ok()) return s;
  }
  return out;
}

std::string TargetList(
    const std::vector<std::unique_ptr<ServerProcess>>& replicas) {
  std::vector<std::string> a;
  for (const auto& r : replicas) a.push_back(r->address());
  return absl::StrCat("ipv4:", absl::StrJoin(a, ","));
}

std::vector<v1::LabeledExample> Examples(int n) {
  const std::vector<std::string> words = {
      "good", "bad", "great", "awful", "fine", "movie", "plot", "actor",
      "dull", "fun", "love",  "hate",  "ok",   "the",   "not",  "very"};
  std::vector<v1::LabeledExample> out;
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>(x >> 33);
  };
  for (int i = 0; i < n; ++i) {
    std::string a, b;
    for (int w = 0, len = 3 + next() % 10; w < len; ++w) {
      absl::StrAppend(&a, w ? " " : "", words[next() % words.size()]);
    }
    for (int w = 0, len = 2 + next() % 5; w < len; ++w) {
      absl::StrAppend(&b, w ? " " : "", words[next() % words.size()]);
    }
    v1::LabeledExample e;
    e.mutable_input()->set_text_a(a);
    if (i % 2 == 0) e.mutable_input()->set_text_b(b);
    e.set_label(next() % 3);
    out.push_back(e);
  }
  return out;
}

std::vector<v1::MaskSpec> SweepSpecs() {
  std::vector<v1::MaskSpec> specs(4);
  specs[0].mutable_all_single_heads();
  specs[1].mutable_all_layers();
  auto* r = specs[2].mutable_random();
  r->set_fraction(0.25);
  r->set_repeats(6);
  r->set_seed(42);
  auto* k = specs[3].mutable_keep_only();
  k->set_layer_begin(0);
  k->set_layer_end(2);
  auto* keep = k->add_keep();
  keep->set_layer(1);
  keep->set_head(2);
  return specs;
}

client::SweepJob Job(const std::vector<v1::LabeledExample>& examples,
                     const std::vector<v1::MaskSpec>& specs) {
  client::MaskPlanOptions o;
  o.layers = 3;
  o.heads = 4;
  client::SweepJob job;
  job.examples = examples;
  job.masks = *client::PlanMasks(specs, o);
  return job;
}

absl::StatusOr<std::map<std::string, Reference>> SingleCallSweep(
    const ServerProcess& server, const std::vector<v1::LabeledExample>& ex,
    const std::vector<v1::MaskSpec>& specs) {
  v1::SweepAblationRequest request;
  for (const auto& e : ex) *request.add_examples() = e;
  for (const auto& m : specs) *request.add_masks() = m;
  grpc::ClientContext context;
  auto reader = server.NewStub()->SweepAblation(&context, request);
  std::map<std::string, Reference> out;
  std::vector<std::string> order;
  v1::SweepAblationResponse event;
  while (reader->Read(&event)) {
    const v1::MaskResult* r = event.has_result()     ? &event.result()
                              : event.has_baseline() ? &event.baseline()
                                                     : nullptr;
    if (r == nullptr) continue;
    Reference ref{r->examples(), r->correct(), {}};
    for (const auto& lh : r->ablated()) {
      ref.ablated.push_back({lh.layer(), lh.head()});
    }
    out[r->mask_id()] = ref;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpcStatus(s);
  return out;
}

std::string CompareWithSingleCall(
    const client::SweepSummary& merged,
    const std::map<std::string, Reference>& reference) {
  std::string diff;
  if (merged.masks.size() + 1 != reference.size()) {
    absl::StrAppend(&diff, merged.masks.size(), " merged masks, ",
                    reference.size() - 1, " in the single call\n");
  }
  auto check = [&](const client::MergedMask& m) {
    auto it = reference.find(m.counts.mask_id);
    if (it == reference.end()) {
      absl::StrAppend(&diff, m.counts.mask_id, " missing in the single call\n");
      return;
    }
    const Reference& r = it->second;
    const double acc = static_cast<double>(r.correct) / r.examples;
    if (m.counts.examples != r.examples || m.counts.correct != r.correct ||
        m.accuracy != acc ||
        (m.counts.mask_index >= 0 && m.counts.ablated != r.ablated)) {
      absl::StrAppend(&diff, m.counts.mask_id, ": merged ", m.counts.correct,
                      "/", m.counts.examples, ", single ", r.correct, "/",
                      r.examples, "\n");
    }
  };
  check(merged.baseline);
  for (const auto& m : merged.masks) check(m);
  return diff;
}

double MetricValue(
    const std::string& metrics, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& labels) {
  double total = 0;
  const std::regex line("(^|\\n)" + name +
                        "(\\{([^}]*)\\})? ([-0-9.e+]+|NaN|[+-]Inf)");
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), line);
       it != std::sregex_iterator(); ++it) {
    const std::string have = (*it)[3];
    bool match = true;
    for (const auto& [key, value] : labels) {
      match = match &&
              absl::StrContains(have, absl::StrCat(key, "=\"", value, "\""));
    }
    if (match) total += std::stod((*it)[4]);
  }
  return total;
}

double OkRequests(const std::string& metrics, const std::string& method) {
  return MetricValue(metrics, "bertology_requests_total",
                     {{"method", method}, {"code", "OK"}});
}

}  // namespace testing
}  // namespace bertology
