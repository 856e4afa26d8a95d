#include "client/cli/sweep_output.h"

#include <cmath>

#include "nlohmann/json.hpp"

namespace bertology {
namespace client {
namespace {

nlohmann::json MaskJson(const MergedMask& m) {
  const MaskCounts& c = m.counts;
  nlohmann::json ablated = nlohmann::json::array();
  for (const auto& [l, h] : c.ablated) ablated.push_back({l, h});
  return {{"mask_index", c.mask_index},
          {"mask_id", c.mask_id},
          {"spec", c.spec},
          {"ablated", ablated},
          {"examples", c.examples},
          {"scored", c.scored},
          {"correct", c.correct},
          {"loss_sum", c.loss_sum},
          {"accuracy", m.accuracy},
          {"accuracy_delta", m.accuracy_delta},
          {"relative_change_percent",
           m.relative_change_percent.has_value()
               ? nlohmann::json(*m.relative_change_percent)
               : nlohmann::json(nullptr)},
          {"mean_loss_delta", m.mean_loss_delta},
          {"accuracy_ci", {m.accuracy_ci.low, m.accuracy_ci.high}},
          {"accuracy_delta_ci", m.accuracy_delta_ci.has_value()
                                    ? nlohmann::json{m.accuracy_delta_ci->low,
                                                     m.accuracy_delta_ci->high}
                                    : nlohmann::json(nullptr)},
          {"distinguishable", m.accuracy_delta_ci.has_value() &&
                                  m.accuracy_delta_ci->ExcludesZero()},
          {"draws", c.draws},
          {"draw_accuracy", m.draw_accuracy},
          {"draw_accuracy_std", m.draw_accuracy_std}};
}

render::MaskOutcome ToOutcome(const MergedMask& m) {
  render::MaskOutcome o;
  o.mask_index = m.counts.mask_index;
  o.mask_id = m.counts.mask_id;
  o.spec = m.counts.spec;
  for (const auto& [l, h] : m.counts.ablated) o.ablated.push_back({l, h});
  o.examples = m.counts.examples;
  o.scored = m.counts.scored;
  o.correct = m.counts.correct;
  o.loss_sum = m.counts.loss_sum;
  o.accuracy = m.accuracy;
  o.accuracy_delta = m.accuracy_delta;
  o.relative_change_percent = m.relative_change_percent.value_or(NAN);
  for (const auto& [l, h] : m.scaled) o.scaled.push_back({l, h});
  o.mean_loss_delta = m.mean_loss_delta;
  o.accuracy_ci_low = m.accuracy_ci.low;
  o.accuracy_ci_high = m.accuracy_ci.high;
  if (m.accuracy_delta_ci.has_value()) {
    o.delta_ci_low = m.accuracy_delta_ci->low;
    o.delta_ci_high = m.accuracy_delta_ci->high;
    o.distinguishable = m.accuracy_delta_ci->ExcludesZero();
  }
  o.draws = m.counts.draws;
  o.draw_accuracy_std = m.draw_accuracy_std;
  return o;
}

}  // namespace

render::SweepResults ToSweepResults(const SweepSummary& summary,
                                    const std::string& model, int num_layers,
                                    int num_heads) {
  render::SweepResults out;
  out.model = model;
  out.num_layers = num_layers;
  out.num_heads = num_heads;
  out.baseline = ToOutcome(summary.baseline);
  for (const MergedMask& m : summary.masks) out.results.push_back(ToOutcome(m));
  return out;
}

std::string SweepJson(const SweepReport& run, const std::string& model,
                      const std::string& mode) {
  nlohmann::json masks = nlohmann::json::array();
  for (const MergedMask& m : run.summary.masks) masks.push_back(MaskJson(m));
  nlohmann::json replicas = nlohmann::json::array();
  for (const ChannelStats& c : run.channels) {
    replicas.push_back({{"channel", c.name},
                        {"shards_ok", c.shards_ok},
                        {"failures", c.failures}});
  }
  nlohmann::json out{{"model", model},
                     {"mode", mode},
                     {"baseline", MaskJson(run.summary.baseline)},
                     {"masks", masks},
                     {"run",
                      {{"shards", run.shards_total},
                       {"resumed", run.shards_resumed},
                       {"retries", run.retries},
                       {"channels", replicas},
                       {"served_by", run.shards_by_peer}}}};
  return out.dump(1) + "\n";
}

}  // namespace client
}  // namespace bertology
