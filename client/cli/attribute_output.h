// An Attribute run's results as CSV, JSON, a terminal table per input and
// the HTML heatmap (render/attribution_heatmap.h), and the method names
// the CLI takes and writes.
#ifndef BERTOLOGY_CLIENT_CLI_ATTRIBUTE_OUTPUT_H_
#define BERTOLOGY_CLIENT_CLI_ATTRIBUTE_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bertology/v1/bertology.pb.h"
#include "client/cli/command_output.h"
#include "client/render/attribution_heatmap.h"

namespace bertology {
namespace client {

struct AttributionRun {
  std::string model;
  std::vector<std::string> label_names;  // the model's classes
  // As sent, with every input (a run of several calls is merged here).
  v1::AttributeRequest request;
  std::vector<v1::AttributionResult> results;  // one per input, in order
};

// "saliency", "gradient-x-input", "integrated-gradients", "rollout",
// "flow", "attention-x-gradient" ("unspecified" for anything else).
std::string AttributionMethodName(v1::AttributionMethod method);
// The inverse; INVALID_ARGUMENT listing the names for an unknown one.
absl::StatusOr<v1::AttributionMethod> ParseAttributionMethod(
    absl::string_view name);
// The six, in the proto's order (what an empty list asks for).
std::vector<v1::AttributionMethod> AllAttributionMethods();
// Gradient x input and integrated gradients take either sign; saliency,
// rollout, flow and attention x gradient are never negative.
bool IsSignedAttribution(v1::AttributionMethod method);

// OK when the results are the request's inputs, each once, in order, and
// every method's scores are one per unit (what the server promises);
// INTERNAL naming the first break otherwise, so a cut stream is not
// written as a complete run.
absl::Status CheckAttributionRun(const AttributionRun& run);

// RFC 4180 with the header
//   input_index,unit,text,segment,special,method,score,target,
//   completeness_gap
// one row per input x unit x method (input-major, then unit, then method
// in the result's order); completeness_gap only on integrated-gradients
// rows (|sum(scores) - (f(x) - f(baseline))|, the same on each of the
// input's units), empty elsewhere. Numbers round-trip (common/csv.h).
std::string AttributionCsv(const AttributionRun& run);

// {"model", "output", "baseline", "rule", "granularity", "methods",
//  "results": [{input_index, text_a, text_b, target, target_label,
//  target_position, output_value, logits, tokens, units, methods:
//  [{method, scores, completeness_gap, baseline_output, steps}]}]};
// unset and non-finite numbers are null.
std::string AttributionJson(const AttributionRun& run);

// Per input: its texts, the output explained, then one line per unit with
// a column per method, then each integrated-gradients gap.
std::string AttributionTable(const AttributionRun& run);

// One line per input: the output explained and the gap.
std::string AttributionSummary(const AttributionRun& run);

// One panel per input, a row per method.
render::AttributionPage AttributionHeatmap(const AttributionRun& run);

// What `attribute` prints and writes: without `dir`, the table; with it,
// attribution.csv, attribution.json and heatmap.html into `dir`, the paths
// written, then the summary.
absl::StatusOr<CommandOutput> AttributeOutput(const AttributionRun& run,
                                              const std::string& dir);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_ATTRIBUTE_OUTPUT_H_
