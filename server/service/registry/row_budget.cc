#include "server/service/registry/row_budget.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bertology {

RowBudget::Lease::Lease(Lease&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      rows_(std::exchange(other.rows_, 0)) {}

RowBudget::Lease& RowBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    rows_ = std::exchange(other.rows_, 0);
  }
  return *this;
}

RowBudget::Lease::~Lease() { Release(); }

void RowBudget::Lease::Release() {
  if (budget_ != nullptr) budget_->Give(rows_);
  budget_ = nullptr;
  rows_ = 0;
}

RowBudget::RowBudget(int64_t capacity, std::string flag, std::string what)
    : capacity_(std::max<int64_t>(1, capacity)),
      flag_(std::move(flag)),
      what_(std::move(what)) {}

RowBudget::~RowBudget() = default;

absl::StatusOr<RowBudget::Lease> RowBudget::Acquire(int64_t rows) {
  if (rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a row budget lease needs >= 1 row, not ", rows));
  }
  rows = std::min(rows, capacity_);
  absl::MutexLock lock(&mu_);
  if (used_ + rows > capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what_, " is busy: running sweeps hold ", used_, " of its ",
                     capacity_, " rows and this one needs ", rows, " (", flag_,
                     "=", capacity_, "); retry later or on another replica"));
  }
  used_ += rows;
  return Lease(this, rows);
}

int64_t RowBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

void RowBudget::Give(int64_t rows) {
  absl::MutexLock lock(&mu_);
  used_ -= rows;
}

}  // namespace bertology
