// Machine-readable sweep reports: CSV (one row per mask, baseline first) and
// JSON (the whole SweepResults), plus the JSON reader so figures can be
// re-drawn from a saved report.
#ifndef BERTOLOGY_CLIENT_RENDER_SWEEP_REPORT_H_
#define BERTOLOGY_CLIENT_RENDER_SWEEP_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/render/sweep_data.h"

namespace bertology::render {

// The one sweep CSV (`bertology sweep --out-csv`, stdout, and --out-dir's
// sweep_results.csv): RFC 4180 (common/csv.h) with a header row:
// mask_index,mask_id,spec,num_ablated,ablated,examples,scored,correct,
// accuracy,accuracy_delta,relative_change_percent,loss_sum,mean_loss_delta,
// accuracy_ci_low,accuracy_ci_high,delta_ci_low,delta_ci_high,
// distinguishable,draws,draw_accuracy_std.
// `ablated` is "L0H1;L3H2". Results are sorted by mask_index; the baseline
// row (mask_index -1) comes first, with empty delta_ci_* and
// distinguishable. Doubles use 17 significant digits so the file
// round-trips; NaN (no value, e.g. the relative change at a zero baseline)
// is an empty field. The intervals are 95 % (common/intervals.h);
// distinguishable is 1 where the change's interval excludes 0.
std::string SweepResultsCsv(const SweepResults& sweep);

// JSON object {"model", "num_layers", "num_heads", "baseline": {...},
// "results": [{...}]}, each mask with the MaskOutcome field names and
// "ablated": [[layer, head], ...]. NaN/inf become null.
std::string SweepResultsJson(const SweepResults& sweep);

// Writes `<dir>/<stem>.csv` and `<dir>/<stem>.json` (dir created if missing)
// and appends the paths to `written` when non-null.
absl::Status WriteSweepReport(const SweepResults& sweep, const std::string& dir,
                              const std::string& stem = "sweep_results",
                              std::vector<std::string>* written = nullptr);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SWEEP_REPORT_H_
