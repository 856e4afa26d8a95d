// Torch-free helpers every bench binary shares: wall time, percentiles and
// the JSON result written to stdout and to --json_out.
#ifndef BERTOLOGY_BENCH_BENCH_STATS_H_
#define BERTOLOGY_BENCH_BENCH_STATS_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace bertology::bench {

// Monotonic wall time in seconds.
double Now();

// The q-quantile (q in [0, 1], nearest rank) of `samples`; 0 when empty.
double Percentile(std::vector<double> samples, double q);

// Prints `result` to stdout and, when `json_out` is not empty, writes it
// there too.
void EmitResult(const nlohmann::json& result, const std::string& json_out);

}  // namespace bertology::bench

#endif  // BERTOLOGY_BENCH_BENCH_STATS_H_
