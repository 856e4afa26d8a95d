#include "client/render/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/render/file_output.h"
#include "common/csv.h"
#include "nlohmann/json.hpp"

namespace bertology::render {
namespace {

using nlohmann::json;

std::string AblatedString(const std::vector<HeadIndex>& heads) {
  return absl::StrJoin(heads, ";", [](std::string* out, const HeadIndex& h) {
    absl::StrAppend(out, "L", h.layer, "H", h.head);
  });
}

void CsvRow(const MaskOutcome& r, std::string* out) {
  absl::StrAppend(
      out, r.mask_index, ",", CsvField(r.mask_id), ",", CsvField(r.spec), ",",
      r.ablated.size(), ",", AblatedString(r.ablated), ",", r.examples, ",",
      r.scored, ",", r.correct, ",", CsvNumber(r.accuracy), ",",
      CsvNumber(r.accuracy_delta), ",", CsvNumber(r.relative_change_percent),
      ",", CsvNumber(r.loss_sum), ",", CsvNumber(r.mean_loss_delta), ",",
      CsvNumber(r.accuracy_ci_low), ",", CsvNumber(r.accuracy_ci_high), ",",
      CsvNumber(r.delta_ci_low), ",", CsvNumber(r.delta_ci_high), ",",
      std::isnan(r.delta_ci_low) ? "" : (r.distinguishable ? "1" : "0"), ",",
      r.draws, ",", CsvNumber(r.draw_accuracy_std), "\n");
}

// nlohmann writes NaN/inf as null already; this keeps it explicit.
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json ToJson(const MaskOutcome& r) {
  json ablated = json::array();
  for (const HeadIndex& h : r.ablated) ablated.push_back({h.layer, h.head});
  return {
      {"mask_index", r.mask_index},
      {"mask_id", r.mask_id},
      {"spec", r.spec},
      {"ablated", ablated},
      {"examples", r.examples},
      {"scored", r.scored},
      {"correct", r.correct},
      {"loss_sum", Number(r.loss_sum)},
      {"accuracy", Number(r.accuracy)},
      {"accuracy_delta", Number(r.accuracy_delta)},
      {"relative_change_percent", Number(r.relative_change_percent)},
      {"mean_loss_delta", Number(r.mean_loss_delta)},
      {"accuracy_ci", {Number(r.accuracy_ci_low), Number(r.accuracy_ci_high)}},
      {"accuracy_delta_ci",
       std::isnan(r.delta_ci_low)
           ? json(nullptr)
           : json{Number(r.delta_ci_low), Number(r.delta_ci_high)}},
      {"distinguishable", r.distinguishable},
      {"draws", r.draws},
      {"draw_accuracy_std", Number(r.draw_accuracy_std)}};
}

}  // namespace

std::string SweepResultsCsv(const SweepResults& sweep) {
  std::string out =
      "mask_index,mask_id,spec,num_ablated,ablated,examples,scored,correct,"
      "accuracy,"
      "accuracy_delta,relative_change_percent,loss_sum,mean_loss_delta,"
      "accuracy_ci_low,accuracy_ci_high,delta_ci_low,delta_ci_high,"
      "distinguishable,draws,draw_accuracy_std\n";
  CsvRow(sweep.baseline, &out);
  std::vector<const MaskOutcome*> sorted;
  for (const MaskOutcome& r : sweep.results) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const MaskOutcome* a, const MaskOutcome* b) {
                     return a->mask_index < b->mask_index;
                   });
  for (const MaskOutcome* r : sorted) CsvRow(*r, &out);
  return out;
}

std::string SweepResultsJson(const SweepResults& sweep) {
  json results = json::array();
  for (const MaskOutcome& r : sweep.results) results.push_back(ToJson(r));
  const json doc = {{"model", sweep.model},
                    {"num_layers", sweep.num_layers},
                    {"num_heads", sweep.num_heads},
                    {"baseline", ToJson(sweep.baseline)},
                    {"results", results}};
  // Replace invalid UTF-8 (from a server's spec string) instead of throwing.
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

absl::Status WriteSweepReport(const SweepResults& sweep, const std::string& dir,
                              const std::string& stem,
                              std::vector<std::string>* written) {
  absl::Status s = WriteOutputFile(dir, absl::StrCat(stem, ".csv"),
                                   SweepResultsCsv(sweep), written);
  if (!s.ok()) return s;
  return WriteOutputFile(dir, absl::StrCat(stem, ".json"),
                         SweepResultsJson(sweep), written);
}

}  // namespace bertology::render
