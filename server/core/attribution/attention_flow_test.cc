#include "server/core/attribution/attention_flow.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Maps = std::vector<std::vector<double>>;

// Softmax-like rows: positive, each summing to 1; with `zeros` > 0 that share
// of entries off the diagonal is set to 0 first (sparse maps).
std::vector<double> RandomMap(int t, std::mt19937& rng, double zeros = 0) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> a(static_cast<size_t>(t) * t);
  for (int i = 0; i < t; ++i) {
    double sum = 0;
    for (int j = 0; j < t; ++j) {
      a[i * t + j] = i != j && u(rng) < zeros ? 0 : std::exp(3 * u(rng));
      sum += a[i * t + j];
    }
    for (int j = 0; j < t; ++j) a[i * t + j] /= sum;
  }
  return a;
}

// Maps shaped like BERT's: most weight on the first and last tokens
// ([CLS], [SEP]) or on the previous token, the rest spread thinly.
std::vector<double> PatternMap(int t, std::mt19937& rng, bool to_ends) {
  std::vector<double> a = RandomMap(t, rng);
  for (int i = 0; i < t; ++i) {
    double sum = 0;
    for (int j = 0; j < t; ++j) {
      const bool strong = to_ends ? (j == 0 || j == t - 1) : j == i - 1;
      a[i * t + j] *= strong ? 200 : 1;
      sum += a[i * t + j];
    }
    for (int j = 0; j < t; ++j) a[i * t + j] /= sum;
  }
  return a;
}

// The worked 2-token example: A'_0 and A'_1, both row-stochastic.
const Maps kTwoByTwo = {{0.75, 0.25, 0.5, 0.5}, {0.6, 0.4, 0.1, 0.9}};

TEST(ResidualAttentionTest, AddsHalfIdentityAndRenormalisesRows) {
  // Row 0 sums to 0.6 (masked heads), row 1 to 0: 0.5 A + 0.5 I is
  // [[0.7, 0.1], [0, 0.5]], then each row over its sum.
  EXPECT_THAT(ResidualAttention({0.4, 0.2, 0.0, 0.0}, 2),
              ElementsAre(DoubleNear(0.875, 1e-15), DoubleNear(0.125, 1e-15),
                          DoubleNear(0, 1e-15), DoubleNear(1, 1e-15)));
  // Full rows: 0.5 A + 0.5 I already sums to 1.
  EXPECT_THAT(ResidualAttention({0.6, 0.4, 0.3, 0.7}, 2),
              ElementsAre(DoubleNear(0.8, 1e-15), DoubleNear(0.2, 1e-15),
                          DoubleNear(0.15, 1e-15), DoubleNear(0.85, 1e-15)));
}

TEST(AttentionRolloutTest, TwoByTwoByHand) {
  // Row q of A'_1 A'_0 (not A'_0 A'_1, which gives [0.475, 0.525] for q 0).
  EXPECT_THAT(AttentionRollout(kTwoByTwo, 2, 0),
              ElementsAre(DoubleNear(0.65, 1e-15), DoubleNear(0.35, 1e-15)));
  EXPECT_THAT(AttentionRollout(kTwoByTwo, 2, 1),
              ElementsAre(DoubleNear(0.525, 1e-15), DoubleNear(0.475, 1e-15)));
}

TEST(AttentionRolloutTest, EqualsExplicitMatrixProduct) {
  const int t = 4;
  std::mt19937 rng(7);
  Maps layers;
  for (int l = 0; l < 3; ++l) {
    layers.push_back(ResidualAttention(RandomMap(t, rng, 0.3), t));
  }
  // R = A'_2 (A'_1 A'_0), every entry written out.
  auto mul = [t](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> c(static_cast<size_t>(t) * t, 0.0);
    for (int i = 0; i < t; ++i)
      for (int k = 0; k < t; ++k)
        for (int j = 0; j < t; ++j) c[i * t + j] += a[i * t + k] * b[k * t + j];
    return c;
  };
  const std::vector<double> r = mul(layers[2], mul(layers[1], layers[0]));
  for (int q = 0; q < t; ++q) {
    std::vector<double> row = AttentionRollout(layers, t, q);
    ASSERT_EQ(row.size(), t);
    double sum = 0;
    for (int j = 0; j < t; ++j) {
      EXPECT_NEAR(row[j], r[q * t + j], 1e-14) << "q " << q << " j " << j;
      sum += row[j];
    }
    EXPECT_NEAR(sum, 1, 1e-14);
  }
}

TEST(AttentionFlowTest, OneLayerIsTheEdgeCapacity) {
  const int t = 3;
  std::mt19937 rng(1);
  const Maps layers = {ResidualAttention(RandomMap(t, rng), t)};
  for (int q = 0; q < t; ++q) {
    absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
    ASSERT_TRUE(flow.ok()) << flow.status();
    for (int s = 0; s < t; ++s) {
      EXPECT_NEAR((*flow)[s], layers[0][q * t + s], 1e-15);
    }
  }
}

TEST(AttentionFlowTest, TwoByTwoByHand) {
  // Two tokens, two layers: from (0, s) two disjoint paths through (1, 0)
  // and (1, 1), each carrying its smaller edge. Query 0: source 0
  // min(.75, .6) + min(.5, .4) = 1, source 1 min(.25, .6) + min(.5, .4) =
  // .65. Query 1: min(.75, .1) + min(.5, .9) = .6, min(.25, .1) + min(.5,
  // .9) = .6.
  absl::StatusOr<std::vector<double>> q0 = AttentionFlow(kTwoByTwo, 2, 0);
  absl::StatusOr<std::vector<double>> q1 = AttentionFlow(kTwoByTwo, 2, 1);
  ASSERT_TRUE(q0.ok() && q1.ok());
  EXPECT_THAT(*q0, ElementsAre(DoubleNear(1, 1e-15), DoubleNear(0.65, 1e-15)));
  EXPECT_THAT(*q1, ElementsAre(DoubleNear(0.6, 1e-15), DoubleNear(0.6, 1e-15)));
}

TEST(AttentionFlowTest, TwoLayersSumTheSmallerEdgeOfEachPath) {
  // With two layers every path s -> i -> q is disjoint from the others.
  const int t = 6, q = 2;
  std::mt19937 rng(3);
  const Maps layers = {RandomMap(t, rng, 0.2), RandomMap(t, rng, 0.2)};
  absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
  ASSERT_TRUE(flow.ok()) << flow.status();
  for (int s = 0; s < t; ++s) {
    double want = 0;
    for (int i = 0; i < t; ++i) {
      want += std::min(layers[0][i * t + s], layers[1][q * t + i]);
    }
    EXPECT_NEAR((*flow)[s], want, 1e-14) << "source " << s;
  }
}

// The minimum cut of the layered graph by trying every node set S that
// holds (0, s) and not (L, q): max-flow = min-cut, independently.
double BruteForceMinCut(const Maps& layers, int t, int s, int q) {
  const int n = static_cast<int>(layers.size() + 1) * t;
  const int source = s, sink = n - t + q;
  double best = std::numeric_limits<double>::infinity();
  for (long mask = 0; mask < (1L << n); ++mask) {
    if (!(mask >> source & 1) || (mask >> sink & 1)) continue;
    double cut = 0;
    for (int l = 0; l + 1 < n / t; ++l)
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j)
          if ((mask >> (l * t + j) & 1) && !(mask >> ((l + 1) * t + i) & 1))
            cut += layers[l][i * t + j];
    best = std::min(best, cut);
  }
  return best;
}

TEST(AttentionFlowTest, EqualsBruteForceMinCut) {
  const int t = 3;
  std::mt19937 rng(11);
  for (double zeros : {0.0, 0.5}) {
    const Maps layers = {RandomMap(t, rng, zeros), RandomMap(t, rng, zeros),
                         RandomMap(t, rng, zeros)};
    for (int q = 0; q < t; ++q) {
      absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
      ASSERT_TRUE(flow.ok()) << flow.status();
      for (int s = 0; s < t; ++s) {
        EXPECT_NEAR((*flow)[s], BruteForceMinCut(layers, t, s, q), 1e-12)
            << "zeros " << zeros << " query " << q << " source " << s;
      }
    }
  }
}

// Edmonds-Karp on the whole layered graph, with a dense residual matrix:
// slow and plain, a reference independent of Boost and of the arc pruning.
double ReferenceMaxFlow(const Maps& layers, int t, int s, int q) {
  const int n = static_cast<int>(layers.size() + 1) * t;
  const int source = s, sink = n - t + q;
  std::vector<double> residual(static_cast<size_t>(n) * n, 0.0);
  for (size_t l = 0; l < layers.size(); ++l)
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j)
        residual[(l * t + j) * n + (l + 1) * t + i] = layers[l][i * t + j];
  double total = 0;
  for (;;) {
    std::vector<int> parent(n, -1);
    std::vector<int> queue = {source};
    parent[source] = source;
    for (size_t k = 0; k < queue.size() && parent[sink] < 0; ++k) {
      for (int v = 0; v < n; ++v) {
        if (parent[v] < 0 && residual[queue[k] * n + v] > 0) {
          parent[v] = queue[k];
          queue.push_back(v);
        }
      }
    }
    if (parent[sink] < 0) return total;
    double push = std::numeric_limits<double>::infinity();
    for (int v = sink; v != source; v = parent[v])
      push = std::min(push, residual[parent[v] * n + v]);
    for (int v = sink; v != source; v = parent[v]) {
      residual[parent[v] * n + v] -= push;
      residual[v * n + parent[v]] += push;
    }
    total += push;
  }
}

TEST(AttentionFlowTest, EqualsReferenceOnShapedMaps) {
  // 20 tokens: enough that the network starts without most arcs and has to
  // take some back in (the sparse and shaped maps have bottlenecks inside).
  const int t = 20;
  std::mt19937 rng(13);
  for (int shape = 0; shape < 4; ++shape) {
    Maps layers;
    for (int l = 0; l < 5; ++l) {
      layers.push_back(ResidualAttention(
          shape < 2 ? RandomMap(t, rng, shape == 0 ? 0.0 : 0.8)
                    : PatternMap(t, rng, shape == 2),
          t));
    }
    for (int q : {0, 7}) {
      absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
      ASSERT_TRUE(flow.ok()) << flow.status();
      for (int s = 0; s < t; ++s) {
        EXPECT_NEAR((*flow)[s], ReferenceMaxFlow(layers, t, s, q), 1e-13)
            << "shape " << shape << " query " << q << " source " << s;
      }
    }
  }
}

TEST(AttentionFlowTest, BoundedByTheCutsAroundSourceAndSink) {
  // 128 tokens, 24 layers (BERT-large): also the size that must stay fast.
  const int t = 128, num_layers = 24, q = 0;
  std::mt19937 rng(5);
  Maps layers;
  for (int l = 0; l < num_layers; ++l) {
    layers.push_back(ResidualAttention(
        l % 3 == 0 ? RandomMap(t, rng) : PatternMap(t, rng, l % 3 == 1), t));
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(flow.ok()) << flow.status();
  RecordProperty("seconds", std::to_string(seconds));
  std::printf("AttentionFlow, %d tokens, %d layers: %.3f s\n", t, num_layers,
              seconds);
  ASSERT_EQ(flow->size(), t);
  double total = 0;
  for (int s = 0; s < t; ++s) {
    double out_of_source = 0;  // Column s of A'_0.
    for (int i = 0; i < t; ++i) out_of_source += layers[0][i * t + s];
    EXPECT_GT((*flow)[s], 0) << s;
    EXPECT_LE((*flow)[s], std::min(out_of_source, 1.0) + 1e-12) << s;
    total += (*flow)[s];
  }
  // Every source reaches the query; together they carry more than any one.
  EXPECT_GT(total, 1);
}

TEST(AttentionFlowTest, RefusesBadShapes) {
  auto message = [](const Maps& layers, int t, int q) {
    absl::StatusOr<std::vector<double>> flow = AttentionFlow(layers, t, q);
    EXPECT_EQ(flow.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(flow.status().message());
  };
  const std::vector<double> ok(4, 0.5);
  EXPECT_THAT(message({ok}, 0, 0), HasSubstr("tokens"));
  EXPECT_THAT(message({ok}, 2, 2), HasSubstr("query 2 out of range"));
  EXPECT_THAT(message({ok}, 2, -1), HasSubstr("query -1 out of range"));
  EXPECT_THAT(message({}, 2, 0), HasSubstr("no layers"));
  EXPECT_THAT(message({ok, {0.5, 0.5, 0.5}}, 2, 0),
              HasSubstr("layer 1's map has 3 values, want 2 x 2 = 4"));
  EXPECT_THAT(message({ok, {0.5, 0.5, -0.1, 0.5}}, 2, 0),
              HasSubstr("layer 1's map at [1, 0] is -0.1"));
  EXPECT_THAT(message({{0.5, std::nan(""), 0.5, 0.5}}, 2, 0),
              HasSubstr("layer 0's map at [0, 1] is nan"));
  EXPECT_TRUE(CheckAttentionLayers({ok, ok}, 2, 1).ok());
}

}  // namespace
}  // namespace bertology
