// Quadrature rules on [0, 1] for integrated gradients (Sundararajan et al.
// 2017): the attribution integrates the gradient along the straight path
// baseline + alpha * (input - baseline), alpha in [0, 1], as
// sum_k weights[k] * f(alphas[k]). Plain doubles, no libtorch.
#ifndef BERTOLOGY_CORE_ATTRIBUTION_QUADRATURE_H_
#define BERTOLOGY_CORE_ATTRIBUTION_QUADRATURE_H_

#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

// n points: alphas in [0, 1], increasing; weights, same length, summing
// to 1 (the length of [0, 1]).
struct Quadrature {
  std::vector<double> alphas, weights;
};

// The most steps either rule accepts.
inline constexpr int kMaxQuadratureSteps = 1024;

// The n-point Gauss-Legendre rule mapped from [-1, 1] to [0, 1]: alphas
// (x_k + 1) / 2, weights w_k / 2, with x_k the roots of the Legendre
// polynomial P_n (found by Newton's iteration) and w_k = 2 / ((1 - x_k^2)
// P_n'(x_k)^2). Exact for polynomials of degree <= 2n - 1. The same rule as
// captum's "gausslegendre" (numpy.polynomial.legendre.leggauss): symmetric
// about 1/2, weights scaled to sum to exactly 1 as leggauss does.
// INVALID_ARGUMENT naming "steps" unless 1 <= n <= kMaxQuadratureSteps.
absl::StatusOr<Quadrature> GaussLegendre(int n);

// The n-point trapezoid rule: alphas k / (n - 1), k = 0..n-1, weights
// 1 / (n - 1) with both ends halved (exact for linear functions). Unlike
// captum's "riemann_trapezoid", whose weights are 1 / n with ends halved
// and sum to (n - 1) / n, these sum to 1. INVALID_ARGUMENT naming "steps"
// unless 2 <= n <= kMaxQuadratureSteps.
absl::StatusOr<Quadrature> RiemannTrapezoid(int n);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ATTRIBUTION_QUADRATURE_H_
