#include "client/scheduler/sweep_merger.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace bertology {
namespace client {
namespace {

MergedMask Finalize(const MaskCounts& c, const MaskCounts& base,
                    bool is_baseline) {
  MergedMask m;
  m.counts = c;
  // Per scored unit: an example, or a labelled word of a token classifier.
  const double acc = c.scored > 0 ? static_cast<double>(c.correct) /
                                        static_cast<double>(c.scored)
                                  : 0.0;
  const double base_acc = base.scored > 0 ? static_cast<double>(base.correct) /
                                                static_cast<double>(base.scored)
                                          : 0.0;
  m.accuracy = acc;
  m.accuracy_delta = acc - base_acc;
  if (base_acc > 0) m.relative_change_percent = (acc / base_acc - 1.0) * 100.0;
  const double mean = c.scored > 0 ? c.loss_sum / c.scored : 0.0;
  const double base_mean = base.scored > 0 ? base.loss_sum / base.scored : 0.0;
  m.mean_loss_delta = mean - base_mean;
  const double draws = std::max(1, c.draws);
  const double per_draw = static_cast<double>(c.scored) / draws;
  m.accuracy_ci = WilsonInterval(c.correct / draws, per_draw);
  if (!is_baseline) m.accuracy_delta_ci = PairedDeltaInterval(c.paired);
  for (int64_t right : c.draw_correct) {
    m.draw_accuracy.push_back(per_draw > 0 ? right / per_draw : 0.0);
  }
  const size_t k = m.draw_accuracy.size();
  if (k >= 2) {
    double mean_draw = 0, ss = 0;
    for (double a : m.draw_accuracy) mean_draw += a / k;
    for (double a : m.draw_accuracy) ss += (a - mean_draw) * (a - mean_draw);
    m.draw_accuracy_std = std::sqrt(ss / (k - 1));
  }
  return m;
}

// What differs between two baselines of one example chunk, "" when they
// are the same: the integer counts exactly, the loss sum within
// kBaselineLossTolerance relative to the larger one.
std::string BaselineDifference(const MaskCounts& a, const MaskCounts& b) {
  std::vector<std::string> out;
  if (a.examples != b.examples) {
    out.push_back(absl::StrCat("examples ", a.examples, " vs ", b.examples));
  }
  if (a.scored != b.scored) {
    out.push_back(absl::StrCat("scored ", a.scored, " vs ", b.scored));
  }
  if (a.correct != b.correct) {
    out.push_back(absl::StrCat("correct ", a.correct, " vs ", b.correct,
                               " (counts must be equal)"));
  }
  const double gap = std::fabs(a.loss_sum - b.loss_sum);
  const double scale = std::max(std::fabs(a.loss_sum), std::fabs(b.loss_sum));
  if (gap > SweepMerger::kBaselineLossTolerance * scale) {
    out.push_back(
        absl::StrFormat("loss_sum differs by %.3g relative (tolerated: %.3g)",
                        gap / scale, SweepMerger::kBaselineLossTolerance));
  }
  return absl::StrJoin(out, ", ");
}

std::string BaselineString(const MaskCounts& c) {
  return absl::StrFormat("%d/%d correct, loss_sum %.17g", c.correct, c.examples,
                         c.loss_sum);
}

}  // namespace

SweepMerger::SweepMerger(const std::vector<PlannedMask>& masks,
                         int num_examples)
    : masks_(masks), num_examples_(num_examples) {}

absl::Status SweepMerger::Add(const ShardResult& r) {
  const Shard& s = r.shard;
  const std::string key = s.Key();
  if (added_.count(key) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("shard ", key, " merged"));
  }
  if (s.mask_begin < 0 || s.mask_end > static_cast<int>(masks_.size()) ||
      s.mask_begin >= s.mask_end || s.example_begin < 0 ||
      s.example_end > num_examples_ || s.example_begin >= s.example_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", key, " is outside the sweep"));
  }
  if (r.baseline.examples != s.num_examples()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", key, ": baseline over ", r.baseline.examples,
                     " examples, expected ", s.num_examples()));
  }
  std::vector<bool> seen(s.num_masks(), false);
  for (const MaskCounts& c : r.masks) {
    const int i = c.mask_index - s.mask_begin;
    if (i < 0 || i >= s.num_masks() || seen[i] ||
        c.examples != s.num_examples()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard ", key, ": unexpected result for mask ",
                       c.mask_index, " over ", c.examples, " examples"));
    }
    seen[i] = true;
  }
  if (static_cast<int>(r.masks.size()) != s.num_masks()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", key, ": ", r.masks.size(), " results for ",
                     s.num_masks(), " masks"));
  }
  const Chunk chunk{s.example_begin, s.example_end};
  // Every shard of a chunk scores the same baseline; one that does not came
  // from a replica that scores differently, and its deltas would be against
  // another model. Of those that agree to rounding, the chunk keeps the
  // lowest mask index's, whatever order they came in.
  const Baseline given{r.baseline, s.mask_begin, key, r.replica};
  const auto [first, inserted] = baseline_.emplace(chunk, given);
  const std::string difference =
      inserted ? "" : BaselineDifference(r.baseline, first->second.counts);
  if (!difference.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shard ", key, " (from ", r.replica.empty() ? "?" : r.replica,
        ") has baseline ", BaselineString(r.baseline), " but shard ",
        first->second.shard, " (from ",
        first->second.replica.empty() ? "?" : first->second.replica, ") has ",
        BaselineString(first->second.counts), " for the same examples (",
        difference,
        "): the replicas score differently (another "
        "dtype, other weights or server version?); run the sweep on "
        "replicas of one identity"));
  }
  if (s.mask_begin < first->second.mask_begin) first->second = given;
  auto& slots = counts_[chunk];
  if (slots.empty()) slots.resize(masks_.size());
  for (const MaskCounts& c : r.masks) slots[c.mask_index] = c;
  added_[key] = true;
  return absl::OkStatus();
}

absl::StatusOr<SweepSummary> SweepMerger::Finish() const {
  MaskCounts base;
  base.mask_id = "baseline";
  base.spec = "no mask";
  int covered = 0;
  for (const auto& [chunk, first] : baseline_) {
    if (chunk.first != covered) break;  // chunks must tile [0, n)
    const MaskCounts& b = first.counts;
    base.examples += b.examples;
    base.scored += b.scored;
    base.correct += b.correct;
    base.loss_sum += b.loss_sum;
    base.paired.Add(b.paired);
    covered = chunk.second;
  }
  if (covered != num_examples_ || baseline_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the baseline covers ", covered, " of ", num_examples_, " examples"));
  }
  SweepSummary summary;
  summary.baseline = Finalize(base, base, /*is_baseline=*/true);
  for (int i = 0; i < static_cast<int>(masks_.size()); ++i) {
    MaskCounts m;
    m.mask_index = i;
    m.mask_id = masks_[i].id;
    m.spec = masks_[i].spec;
    for (const auto& [chunk, slots] : counts_) {
      if (!slots[i].has_value()) continue;
      const MaskCounts& c = *slots[i];
      if (m.spec.empty()) m.spec = c.spec;
      if (m.ablated.empty()) m.ablated = c.ablated;
      m.examples += c.examples;
      m.scored += c.scored;
      m.correct += c.correct;
      m.loss_sum += c.loss_sum;
      m.draws = c.draws;
      if (m.draw_correct.empty())
        m.draw_correct.assign(c.draw_correct.size(), 0);
      for (size_t k = 0; k < c.draw_correct.size() && k < m.draw_correct.size();
           ++k) {
        m.draw_correct[k] += c.draw_correct[k];
      }
      m.paired.Add(c.paired);
    }
    if (m.examples != num_examples_) {
      return absl::FailedPreconditionError(
          absl::StrCat("mask ", m.mask_id, " has results for ", m.examples,
                       " of ", num_examples_, " examples"));
    }
    summary.masks.push_back(Finalize(m, base, /*is_baseline=*/false));
    summary.masks.back().scaled = masks_[i].scaled;
  }
  return summary;
}

}  // namespace client
}  // namespace bertology
