// Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying
// Attention Flow in Transformers"): how much of a query token's top-layer
// representation each input token reaches through the layers' attention,
// read off per-layer head-mean maps. Plain doubles, no libtorch, no gRPC.
//
// Shapes: `tokens` = T; a map is a row-major [T * T] vector whose row i is
// the attending query i and column j the attended key j. `layers[l]` is
// layer l's residual-corrected map A'_l (ResidualAttention), l = 0 the
// layer nearest the input.
#ifndef BERTOLOGY_CORE_ATTRIBUTION_ATTENTION_FLOW_H_
#define BERTOLOGY_CORE_ATTRIBUTION_ATTENTION_FLOW_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bertology {

// A' = 0.5 * A + 0.5 * I, each row then divided by its sum: the residual
// connection counted as attention to oneself. A's rows may sum to less than
// 1 (heads masked to zero in the mean); after adding 0.5 I no row sums to 0.
// Precondition: mean_attention.size() == tokens * tokens, entries >= 0.
std::vector<double> ResidualAttention(const std::vector<double>& mean_attention,
                                      int tokens);

// OK if `layers` is a non-empty list of [tokens * tokens] maps of finite,
// non-negative values, tokens >= 1 and 0 <= query < tokens; otherwise
// INVALID_ARGUMENT naming what is wrong. AttentionFlow checks it itself;
// AttentionRollout's caller checks it.
absl::Status CheckAttentionLayers(
    const std::vector<std::vector<double>>& layers, int tokens, int query);

// Row `query` of R = A'_{L-1} ... A'_0 (L = layers.size()): T values, the
// share of query's top-layer representation that each input token makes up
// when every layer's mixing is followed through linearly. Sums to 1 when
// every A'_l is row-stochastic. Precondition: CheckAttentionLayers is OK.
std::vector<double> AttentionRollout(
    const std::vector<std::vector<double>>& layers, int tokens, int query);

// For each input token t, the maximum flow from node (0, t) to node
// (L, query) of the layered graph with nodes (l, i), l in 0..L, and an edge
// (l, j) -> (l+1, i) of capacity A'_l[i, j]: T values, each at most 1 for
// row-stochastic maps. Boost.Graph's Boykov-Kolmogorov max-flow, rerun per
// source on one network that holds the arcs that matter (the .cc says how
// it proves the flow maximal in the whole graph); T = 128, L = 24 takes
// 0.1-0.6 s on this project's 2-core machine.
absl::StatusOr<std::vector<double>> AttentionFlow(
    const std::vector<std::vector<double>>& layers, int tokens, int query);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ATTRIBUTION_ATTENTION_FLOW_H_
