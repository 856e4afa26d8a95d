// A per-model budget of rows for work that is admitted whole or not at all.
//
// A running SweepAblation call holds the rows of its batched forward passes
// (its batch rows) until it ends. Sweeps take their rows here when they
// start; one that does not fit is refused at once with RESOURCE_EXHAUSTED
// naming the flag that sets the budget, instead of joining a queue that
// grows without bound (every sweep would otherwise run at once, each on its
// own thread, sharing the cores and their memory).
//
// Thread-safe.
#ifndef BERTOLOGY_SERVICE_REGISTRY_ROW_BUDGET_H_
#define BERTOLOGY_SERVICE_REGISTRY_ROW_BUDGET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace bertology {

class RowBudget {
 public:
  // Rows held by one admitted piece of work; given back on destruction.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    int64_t rows() const { return rows_; }

   private:
    friend class RowBudget;
    Lease(RowBudget* budget, int64_t rows) : budget_(budget), rows_(rows) {}
    void Release();
    RowBudget* budget_ = nullptr;
    int64_t rows_ = 0;
  };

  // `capacity` rows (>= 1); `flag` names the setting in refusals, e.g.
  // "--max_queued_rows"; `what` names the budget's owner, e.g. "model tiny".
  RowBudget(int64_t capacity, std::string flag, std::string what);
  RowBudget(const RowBudget&) = delete;
  RowBudget& operator=(const RowBudget&) = delete;
  ~RowBudget();  // every Lease must be gone

  // Takes `rows` (>= 1; more than the capacity is taken as the capacity, so
  // such work runs alone) or fails at once with RESOURCE_EXHAUSTED when the
  // rows held now leave too few. INVALID_ARGUMENT for rows < 1.
  absl::StatusOr<Lease> Acquire(int64_t rows);

  int64_t capacity() const { return capacity_; }
  int64_t used() const;

 private:
  void Give(int64_t rows);

  const int64_t capacity_;
  const std::string flag_;
  const std::string what_;
  mutable absl::Mutex mu_;
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_REGISTRY_ROW_BUDGET_H_
