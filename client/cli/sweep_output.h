// A merged sweep as JSON, and as the plain render::SweepResults the report,
// figure and CSV writers take (its CSV is render::SweepResultsCsv, the same
// for --out-csv and --out-dir).
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_

#include <string>

#include "client/render/sweep_data.h"
#include "client/scheduler/sweep_scheduler.h"

namespace bertology {
namespace client {

// {"model", "mode", "baseline": {...}, "masks": [{...}], "run": {shards,
// retries, replicas}}; doubles round-trip exactly; relative_change_percent
// is null when the baseline accuracy is 0.
std::string SweepJson(const SweepReport& run, const std::string& model,
                      const std::string& mode);

// The same numbers (nothing recomputed) with the model's shape, so the
// figures can place single heads and whole layers; no relative change is
// NaN there.
render::SweepResults ToSweepResults(const SweepSummary& summary,
                                    const std::string& model, int num_layers,
                                    int num_heads);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_OUTPUT_H_
