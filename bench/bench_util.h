// The labelled examples every in-process measurement runs on (libtorch side;
// the torch-free helpers are in bench_stats.h).
#ifndef BERTOLOGY_BENCH_BENCH_UTIL_H_
#define BERTOLOGY_BENCH_BENCH_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/bench_stats.h"
#include "server/core/model/model.h"
#include "server/core/sweep/sweep.h"

namespace bertology::bench {

// The first `limit` rows (0: all) of a `text_a<TAB>text_b<TAB>label` file,
// tokenised by `model` at its max_seq_len. Labels are class indices, or
// label names from the model's id2label.
absl::StatusOr<std::vector<SweepExample>> LoadExamples(const Model& model,
                                                       const std::string& path,
                                                       int limit);

}  // namespace bertology::bench

#endif  // BERTOLOGY_BENCH_BENCH_UTIL_H_
