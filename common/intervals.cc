#include "common/intervals.h"

#include <algorithm>
#include <cmath>

namespace bertology {

Interval WilsonInterval(double successes, double n, double z) {
  if (n <= 0) return Interval{0.0, 1.0};
  const double p = successes / n;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / n;
  const double center = (p + z2 / (2.0 * n)) / denom;
  const double half =
      z * std::sqrt(std::max(0.0, p * (1.0 - p) / n + z2 / (4.0 * n * n))) /
      denom;
  return Interval{std::max(0.0, center - half), std::min(1.0, center + half)};
}

std::optional<Interval> PairedDeltaInterval(const PairedSums& sums, double z) {
  if (sums.clusters < 2 || sums.units <= 0) return std::nullopt;
  // Bonett & Price's adjustment: one pseudo-example gained and one lost.
  PairedSums s = sums;
  s.Add(1, 1.0);
  s.Add(1, -1.0);
  const double r = s.diff / s.units;
  // sum (d_i - r n_i)^2, expanded into the sums.
  const double residual =
      std::max(0.0, s.diff_sq - 2.0 * r * s.units_diff + r * r * s.units_sq);
  const double k = static_cast<double>(s.clusters);
  const double se = std::sqrt(k / (k - 1.0) * residual) / s.units;
  return Interval{r - z * se, r + z * se};
}

}  // namespace bertology
