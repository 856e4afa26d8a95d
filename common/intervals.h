// 95 % intervals for sweep results, shared by the server (which reports
// them) and the sweep scheduler (which recomputes them after merging
// shards from the sums below, which add across example chunks).
//
// Accuracy: the Wilson score interval (Wilson 1927; Agresti & Coull 1998
// recommend it over the Wald interval at every n). The change against the
// unmasked baseline: a paired interval, since mask and baseline score the
// same examples: the mean per-unit difference r = sum(d_i) / sum(n_i), with
// d_i an example's correct units under the mask minus under the baseline
// (mean over draws for resample) and n_i its scored units (1 per example
// for a sequence classifier), and its standard error from the examples as
// clusters: se^2 = k / (k - 1) * sum((d_i - r n_i)^2) / (sum n_i)^2 over k
// examples, after adding two pseudo-examples of one unit, one gained (d =
// +1) and one lost (d = -1). For a sequence classifier that is Bonett &
// Price's (2012) adjusted Wald interval for paired proportions: the plain
// Wald form of McNemar's comparison is far too narrow when few examples
// change (4 gained and none lost of 1,000 would exclude 0, where McNemar's
// exact test gives p = 0.125; adjusted it does not, and 8 to 0, p = 0.008,
// does). The interval is centred on sum(d_i) / (sum n_i + 2), a shade
// toward 0 from the change itself. Needs k >= 2. No libtorch, no gRPC.
#ifndef BERTOLOGY_COMMON_INTERVALS_H_
#define BERTOLOGY_COMMON_INTERVALS_H_

#include <cstdint>
#include <optional>

namespace bertology {

// The normal quantile of a two-sided 95 % interval.
inline constexpr double kZ95 = 1.959963984540054;

struct Interval {
  double low = 0;
  double high = 0;
  // True when the interval lies strictly on one side of 0.
  bool ExcludesZero() const { return low > 0 || high < 0; }
};

// Wilson score interval of a proportion `successes` / `n` (n > 0; 0 gives
// [0, 1]). `successes` may be fractional (a mean over draws).
Interval WilsonInterval(double successes, double n, double z = kZ95);

// Sufficient statistics of the paired differences; they add.
struct PairedSums {
  int64_t clusters = 0;   // k: examples
  double units = 0;       // sum n_i
  double units_sq = 0;    // sum n_i^2
  double diff = 0;        // sum d_i
  double diff_sq = 0;     // sum d_i^2
  double units_diff = 0;  // sum n_i d_i

  void Add(double n, double d) {
    ++clusters;
    units += n;
    units_sq += n * n;
    diff += d;
    diff_sq += d * d;
    units_diff += n * d;
  }
  void Add(const PairedSums& o) {
    clusters += o.clusters;
    units += o.units;
    units_sq += o.units_sq;
    diff += o.diff;
    diff_sq += o.diff_sq;
    units_diff += o.units_diff;
  }
};

// The interval of the accuracy change r (above); none with fewer than 2
// examples or no scored unit.
std::optional<Interval> PairedDeltaInterval(const PairedSums& sums,
                                            double z = kZ95);

}  // namespace bertology

#endif  // BERTOLOGY_COMMON_INTERVALS_H_
