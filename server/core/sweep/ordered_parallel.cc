#include "server/core/sweep/ordered_parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace bertology {
namespace {

class OrderedRun {
 public:
  OrderedRun(int jobs, int workers, const OrderedParallelFns& fns)
      : jobs_(jobs),
        window_(2 * workers),
        fns_(fns),
        done_(static_cast<size_t>(jobs), false) {}

  absl::Status Run(int workers) {
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([this] {
        if (fns_.on_worker_start) fns_.on_worker_start();
        Work();
      });
    }
    for (std::thread& t : threads) t.join();
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  void Work() {
    while (true) {
      int job;
      {
        absl::MutexLock lock(&mu_);
        // Wait for room in the window (or for the end).
        mu_.Await(absl::Condition(this, &OrderedRun::CanHandOut));
        if (!status_.ok() || next_job_ >= jobs_) return;
        job = next_job_++;
      }
      absl::Status s = fns_.compute(job);
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        Fail(std::move(s));
        return;
      }
      done_[job] = true;
      // Commit every finished job that is next in order; the lock keeps
      // commits one at a time and in order.
      while (status_.ok() && next_commit_ < jobs_ && done_[next_commit_]) {
        absl::Status c = fns_.commit(next_commit_);
        if (!c.ok()) {
          Fail(std::move(c));
          return;
        }
        ++next_commit_;
      }
    }
  }

  bool CanHandOut() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !status_.ok() || next_job_ >= jobs_ ||
           next_job_ - next_commit_ < window_;
  }

  void Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (status_.ok()) status_ = std::move(s);
  }

  const int jobs_;
  const int window_;
  const OrderedParallelFns& fns_;
  absl::Mutex mu_;
  std::vector<bool> done_ ABSL_GUARDED_BY(mu_);
  int next_job_ ABSL_GUARDED_BY(mu_) = 0;
  int next_commit_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status RunOrderedParallel(int jobs, int workers,
                                const OrderedParallelFns& fns) {
  if (jobs <= 0) return absl::OkStatus();
  if (workers <= 1 || jobs <= 1) {
    for (int i = 0; i < jobs; ++i) {
      if (absl::Status s = fns.compute(i); !s.ok()) return s;
      if (absl::Status s = fns.commit(i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  OrderedRun run(jobs, workers, fns);
  return run.Run(std::min(workers, jobs));
}

}  // namespace bertology
