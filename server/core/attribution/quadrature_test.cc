#include "server/core/attribution/quadrature.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

// sum_k w_k alpha_k^d against the exact 1 / (d + 1) on [0, 1].
double MonomialError(const Quadrature& q, int d) {
  double sum = 0;
  for (size_t k = 0; k < q.alphas.size(); ++k) {
    sum += q.weights[k] * std::pow(q.alphas[k], d);
  }
  return sum - 1.0 / (d + 1);
}

TEST(GaussLegendreTest, MatchesClosedFormsUpToFivePoints) {
  // Nodes x and weights w on [-1, 1], increasing x (Abramowitz & Stegun
  // 25.4.29); the rule on [0, 1] is (x + 1) / 2, w / 2.
  const double r30 = std::sqrt(30.0), r70 = std::sqrt(70.0);
  const double a4 = std::sqrt(3.0 / 7 - 2.0 / 7 * std::sqrt(6.0 / 5));
  const double b4 = std::sqrt(3.0 / 7 + 2.0 / 7 * std::sqrt(6.0 / 5));
  const double a5 = std::sqrt(5 - 2 * std::sqrt(10.0 / 7)) / 3;
  const double b5 = std::sqrt(5 + 2 * std::sqrt(10.0 / 7)) / 3;
  const double wa4 = (18 + r30) / 36, wb4 = (18 - r30) / 36;
  const double wa5 = (322 + 13 * r70) / 900, wb5 = (322 - 13 * r70) / 900;
  const std::vector<std::vector<double>> x = {
      {0},
      {-1 / std::sqrt(3.0), 1 / std::sqrt(3.0)},
      {-std::sqrt(0.6), 0, std::sqrt(0.6)},
      {-b4, -a4, a4, b4},
      {-b5, -a5, 0, a5, b5}};
  const std::vector<std::vector<double>> w = {
      {2},
      {1, 1},
      {5.0 / 9, 8.0 / 9, 5.0 / 9},
      {wb4, wa4, wa4, wb4},
      {wb5, wa5, 128.0 / 225, wa5, wb5}};
  for (int n = 1; n <= 5; ++n) {
    absl::StatusOr<Quadrature> q = GaussLegendre(n);
    ASSERT_TRUE(q.ok()) << q.status();
    ASSERT_EQ(q->alphas.size(), n);
    ASSERT_EQ(q->weights.size(), n);
    for (int k = 0; k < n; ++k) {
      EXPECT_NEAR(q->alphas[k], (x[n - 1][k] + 1) / 2, 1e-15) << n << " " << k;
      EXPECT_NEAR(q->weights[k], w[n - 1][k] / 2, 1e-15) << n << " " << k;
    }
  }
}

TEST(GaussLegendreTest, ExactUpToDegreeTwoNMinusOneOnly) {
  for (int n = 1; n <= 16; ++n) {
    absl::StatusOr<Quadrature> q = GaussLegendre(n);
    ASSERT_TRUE(q.ok()) << q.status();
    for (int d = 0; d <= 2 * n - 1; ++d) {
      EXPECT_NEAR(MonomialError(*q, d), 0, 1e-15) << "n " << n << " d " << d;
    }
    // Degree 2n is where an n-point rule stops being exact (the error,
    // (n!)^4 / ((2n+1) ((2n)!)^2), is still far above rounding here).
    if (n <= 6) {
      EXPECT_GT(std::abs(MonomialError(*q, 2 * n)), 1e-9) << "n " << n;
    }
  }
}

TEST(GaussLegendreTest, ThousandTwentyFourPoints) {
  absl::StatusOr<Quadrature> q = GaussLegendre(1024);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->alphas.size(), 1024);
  double total = 0;
  for (int k = 0; k < 1024; ++k) {
    EXPECT_GT(q->alphas[k], k == 0 ? 0.0 : q->alphas[k - 1]) << k;
    EXPECT_LT(q->alphas[k], 1) << k;
    EXPECT_NEAR(q->alphas[k] + q->alphas[1023 - k], 1, 1e-15) << k;
    EXPECT_GT(q->weights[k], 0) << k;
    EXPECT_EQ(q->weights[k], q->weights[1023 - k]) << k;
    total += q->weights[k];
  }
  EXPECT_NEAR(total, 1, 1e-14);
  // Exact to degree 2047: every node and weight must be right to ~1e-15.
  for (int d : {1, 2, 100, 1000, 2047}) {
    EXPECT_NEAR(MonomialError(*q, d), 0, 1e-14) << "d " << d;
  }
  double cosine = 0;
  for (int k = 0; k < 1024; ++k)
    cosine += q->weights[k] * std::cos(q->alphas[k]);
  EXPECT_NEAR(cosine, std::sin(1.0), 1e-15);
}

TEST(RiemannTrapezoidTest, NodesWeightsAndError) {
  absl::StatusOr<Quadrature> two = RiemannTrapezoid(2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->alphas, (std::vector<double>{0, 1}));
  EXPECT_EQ(two->weights, (std::vector<double>{0.5, 0.5}));
  absl::StatusOr<Quadrature> five = RiemannTrapezoid(5);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(five->alphas, (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(five->weights,
            (std::vector<double>{0.125, 0.25, 0.25, 0.25, 0.125}));
  for (int n : {2, 3, 10, 1024}) {
    absl::StatusOr<Quadrature> q = RiemannTrapezoid(n);
    ASSERT_TRUE(q.ok()) << q.status();
    const double h = 1.0 / (n - 1);
    EXPECT_NEAR(MonomialError(*q, 0), 0, 1e-13) << n;
    EXPECT_NEAR(MonomialError(*q, 1), 0, 1e-13) << n;
    // The trapezoid's error on x^2 is h^2 f'' / 12 = h^2 / 6, exactly.
    EXPECT_NEAR(MonomialError(*q, 2), h * h / 6, 1e-13) << n;
  }
}

TEST(QuadratureTest, RefusesBadStepCounts) {
  for (int n : {0, -3, 1025}) {
    absl::Status s = GaussLegendre(n).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(s.message(), HasSubstr("steps must be in [1, 1024]")) << n;
  }
  for (int n : {1, 0, 1025}) {
    absl::Status s = RiemannTrapezoid(n).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(s.message(), HasSubstr("steps must be in [2, 1024]")) << n;
  }
}

}  // namespace
}  // namespace bertology
