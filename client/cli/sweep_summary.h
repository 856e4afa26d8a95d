// The human-readable end of a sweep: a few short tables (baseline accuracy,
// the most harmful and most helpful single heads, whole layers, random masks
// by fraction and layer range, any other masks). This is what `make demo`
// and a researcher at a terminal read, so it favours a glance over
// completeness; the CSV/JSON reports hold every number.
#ifndef BERTOLOGY_CLIENT_CLI_SWEEP_SUMMARY_H_
#define BERTOLOGY_CLIENT_CLI_SWEEP_SUMMARY_H_

#include <string>

#include "client/render/sweep_data.h"

namespace bertology {
namespace client {

// How many single heads each of the harmful/helpful lists shows.
inline constexpr int kSummaryTopHeads = 5;

// Plain text, one section per kind of mask present, ending in a newline.
// Changes are relative to the baseline accuracy, in percent ("n/a" when the
// baseline is 0). `mode` ("zero", "uniform") goes in the first line.
std::string SweepSummaryTable(const render::SweepResults& sweep,
                              const std::string& mode);

}  // namespace client
}  // namespace bertology

#endif  // BERTOLOGY_CLIENT_CLI_SWEEP_SUMMARY_H_
