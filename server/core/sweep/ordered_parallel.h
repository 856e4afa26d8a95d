// Runs numbered jobs on a few threads and commits their results in number
// order, so that a parallel run accumulates exactly what a serial one would
// (same batches, same order of floating-point sums). No libtorch.
#ifndef BERTOLOGY_CORE_SWEEP_ORDERED_PARALLEL_H_
#define BERTOLOGY_CORE_SWEEP_ORDERED_PARALLEL_H_

#include <functional>

#include "absl/status/status.h"

namespace bertology {

struct OrderedParallelFns {
  // Computes job i, writing its output where commit(i) will read it (a slot
  // per job: compute calls for different jobs run at the same time).
  std::function<absl::Status(int job)> compute;
  // Consumes job i's output: called for 0, 1, ..., jobs - 1 in that order,
  // one call at a time (under a lock, from whichever worker finished the
  // job that made i next).
  std::function<absl::Status(int job)> commit;
  // Run once at the start of each worker thread this call creates (not on
  // the caller's thread), e.g. to size its thread-local compute pools.
  std::function<void()> on_worker_start;
};

// Runs jobs [0, jobs) on `workers` threads (the caller's thread alone when
// workers <= 1 or jobs <= 1, with no thread created). Returns the first
// error of compute or commit (by job number among those seen); after an
// error no new job starts and nothing more is committed. A job is handed
// out only while fewer than 2 x workers results wait to be committed, so
// memory held by uncommitted outputs stays bounded.
absl::Status RunOrderedParallel(int jobs, int workers,
                                const OrderedParallelFns& fns);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_SWEEP_ORDERED_PARALLEL_H_
