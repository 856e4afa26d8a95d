#include "server/core/attribution/quadrature.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bertology {
namespace {

absl::Status CheckSteps(int n, int min, const char* rule) {
  if (n < min || n > kMaxQuadratureSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps must be in [", min, ", ", kMaxQuadratureSteps,
                     "] for ", rule, ", got ", n));
  }
  return absl::OkStatus();
}

// P_n(x) and P_n'(x) by Bonnet's recurrence (k+1) P_{k+1} = (2k+1) x P_k -
// k P_{k-1}; |x| < 1.
void Legendre(int n, double x, double* p, double* dp) {
  double p0 = 1, p1 = x;
  for (int k = 1; k < n; ++k) {
    const double p2 = ((2 * k + 1) * x * p1 - k * p0) / (k + 1);
    p0 = p1;
    p1 = p2;
  }
  *p = n == 0 ? 1 : p1;
  *dp = n * (x * p1 - p0) / (x * x - 1);
}

}  // namespace

absl::StatusOr<Quadrature> GaussLegendre(int n) {
  if (absl::Status s = CheckSteps(n, 1, "Gauss-Legendre"); !s.ok()) return s;
  const double pi = std::acos(-1.0);
  std::vector<double> x(n), w(n);
  // Roots come in pairs +-x; Newton from cos(pi (k + 0.75) / (n + 0.5)),
  // close to the k-th largest root, converges to it in a few steps.
  for (int k = 0; k < (n + 1) / 2; ++k) {
    double root = std::cos(pi * (k + 0.75) / (n + 0.5));
    double p = 0, dp = 1;
    for (int iter = 0; iter < 100; ++iter) {
      Legendre(n, root, &p, &dp);
      const double step = p / dp;
      root -= step;
      if (std::abs(step) <= 4 * std::numeric_limits<double>::epsilon()) break;
    }
    if (2 * k + 1 == n) root = 0;  // The middle root of odd n, exactly.
    Legendre(n, root, &p, &dp);
    const double weight = 2 / ((1 - root * root) * dp * dp);
    x[n - 1 - k] = root;
    x[k] = -root;
    w[n - 1 - k] = w[k] = weight;
  }
  double total = 0;
  for (double v : w) total += v;
  Quadrature q;
  q.alphas.resize(n);
  q.weights.resize(n);
  for (int k = 0; k < n; ++k) {
    q.alphas[k] = (x[k] + 1) / 2;
    q.weights[k] = w[k] / total;  // w / 2, scaled to sum to 1 as leggauss.
  }
  return q;
}

absl::StatusOr<Quadrature> RiemannTrapezoid(int n) {
  if (absl::Status s = CheckSteps(n, 2, "the trapezoid rule"); !s.ok()) {
    return s;
  }
  Quadrature q;
  q.alphas.resize(n);
  q.weights.assign(n, 1.0 / (n - 1));
  for (int k = 0; k < n; ++k) q.alphas[k] = static_cast<double>(k) / (n - 1);
  q.weights.front() /= 2;
  q.weights.back() /= 2;
  return q;
}

}  // namespace bertology
