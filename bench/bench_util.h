// Shared helpers of the bench binaries: wall time, percentiles, the labelled
// examples every measurement runs on.
#ifndef BERTOLOGY_BENCH_BENCH_UTIL_H_
#define BERTOLOGY_BENCH_BENCH_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/model.h"
#include "server/core/sweep.h"

namespace bertology::bench {

// Monotonic wall time in seconds.
double Now();

// The q-quantile (q in [0, 1], nearest rank) of `samples`; 0 when empty.
double Percentile(std::vector<double> samples, double q);

// The first `limit` rows (0: all) of a `text_a<TAB>text_b<TAB>label` file,
// tokenised by `model` at its max_seq_len. Labels are class indices, or
// label names from the model's id2label.
absl::StatusOr<std::vector<SweepExample>> LoadExamples(const Model& model,
                                                       const std::string& path,
                                                       int limit);

}  // namespace bertology::bench

#endif  // BERTOLOGY_BENCH_BENCH_UTIL_H_
