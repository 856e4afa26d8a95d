#include "server/core/attribution/attention_flow.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/graph/boykov_kolmogorov_max_flow.hpp"
#include "boost/graph/compressed_sparse_row_graph.hpp"
#include "boost/property_map/property_map.hpp"

namespace bertology {
namespace {

using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Color = boost::default_color_type;

struct Arc {
  Vertex from, to;
  double capacity;
};

// A max-flow network on a fixed set of arcs, each with its reverse arc of
// capacity 0, as a CSR graph (contiguous arcs, found by index) with the
// maps Boykov-Kolmogorov needs. MaxFlow may be called again: BK resets the
// residual capacities itself. At most one arc per ordered vertex pair.
class FlowNetwork {
 public:
  FlowNetwork(std::vector<Arc> arcs, std::size_t vertices) {
    const std::size_t forward = arcs.size();
    for (std::size_t k = 0; k < forward; ++k) {
      arcs.push_back({arcs[k].to, arcs[k].from, 0});
    }
    std::sort(arcs.begin(), arcs.end(), [](const Arc& a, const Arc& b) {
      return std::tie(a.from, a.to) < std::tie(b.from, b.to);
    });
    std::vector<std::pair<Vertex, Vertex>> ends;
    for (const Arc& a : arcs) {
      ends.emplace_back(a.from, a.to);
      capacity_.push_back(a.capacity);
    }
    graph_ = Graph(boost::edges_are_sorted, ends.begin(), ends.end(), vertices);
    residual_.resize(arcs.size());
    reverse_.resize(arcs.size());
    for (Vertex u = 0; u < vertices; ++u) {
      for (auto [e, e_end] = boost::out_edges(u, graph_); e != e_end; ++e) {
        auto [r, r_end] = boost::out_edges(boost::target(*e, graph_), graph_);
        reverse_[(*e).idx] =
            *std::lower_bound(r, r_end, u, [this](const Edge& x, Vertex v) {
              return boost::target(x, graph_) < v;
            });
      }
    }
    predecessor_.resize(vertices);
    color_.resize(vertices);
    distance_.resize(vertices);
  }

  double MaxFlow(Vertex source, Vertex sink) {
    auto edge = boost::get(boost::edge_index, graph_);
    auto vertex = boost::get(boost::vertex_index, graph_);
    return boost::boykov_kolmogorov_max_flow(
        graph_, boost::make_iterator_property_map(capacity_.begin(), edge),
        boost::make_iterator_property_map(residual_.begin(), edge),
        boost::make_iterator_property_map(reverse_.begin(), edge),
        boost::make_iterator_property_map(predecessor_.begin(), vertex),
        boost::make_iterator_property_map(color_.begin(), vertex),
        boost::make_iterator_property_map(distance_.begin(), vertex), vertex,
        source, sink);
  }

  // Sets each arc out of `u` to capacity(its target); `u` must have no arcs
  // in (or their reverse arcs would change too).
  template <typename Capacity>
  void SetOutCapacities(Vertex u, Capacity capacity) {
    for (auto [e, e_end] = boost::out_edges(u, graph_); e != e_end; ++e) {
      capacity_[(*e).idx] = capacity(boost::target(*e, graph_));
    }
  }

  // After MaxFlow: black for the source's search tree, white for the
  // sink's, gray for neither. Black, and all but white, are min cuts.
  Color tree(Vertex v) const { return color_[v]; }

 private:
  Graph graph_;
  std::vector<double> capacity_, residual_;
  std::vector<Edge> reverse_, predecessor_;
  std::vector<Color> color_;
  std::vector<long> distance_;
};

}  // namespace

std::vector<double> ResidualAttention(const std::vector<double>& mean_attention,
                                      int tokens) {
  std::vector<double> out(mean_attention.size());
  for (int i = 0; i < tokens; ++i) {
    const double* row = mean_attention.data() + std::size_t{1} * i * tokens;
    double* out_row = out.data() + std::size_t{1} * i * tokens;
    double sum = 0;
    for (int j = 0; j < tokens; ++j) {
      out_row[j] = 0.5 * row[j] + (i == j ? 0.5 : 0.0);
      sum += out_row[j];
    }
    for (int j = 0; j < tokens; ++j) out_row[j] /= sum;
  }
  return out;
}

absl::Status CheckAttentionLayers(
    const std::vector<std::vector<double>>& layers, int tokens, int query) {
  if (tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens must be at least 1, got ", tokens));
  }
  if (query < 0 || query >= tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query ", query, " out of range [0, ", tokens, ") tokens"));
  }
  if (layers.empty()) {
    return absl::InvalidArgumentError("no layers: need at least one map");
  }
  const std::size_t size = std::size_t{1} * tokens * tokens;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].size() != size) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", l, "'s map has ", layers[l].size(),
                       " values, want ", tokens, " x ", tokens, " = ", size));
    }
    for (std::size_t k = 0; k < size; ++k) {
      if (!std::isfinite(layers[l][k]) || layers[l][k] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "layer ", l, "'s map at [", k / tokens, ", ", k % tokens, "] is ",
            layers[l][k], ", want a finite value >= 0"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<double> AttentionRollout(
    const std::vector<std::vector<double>>& layers, int tokens, int query) {
  // e_query^T A'_{L-1} ... A'_0, multiplied from the left: one row vector
  // times each map, O(L T^2) instead of the full matrix product.
  std::vector<double> row(tokens, 0.0), next(tokens);
  row[query] = 1;
  for (auto l = layers.rbegin(); l != layers.rend(); ++l) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int i = 0; i < tokens; ++i) {
      if (row[i] == 0) continue;
      const double* a = l->data() + std::size_t{1} * i * tokens;
      for (int j = 0; j < tokens; ++j) next[j] += row[i] * a[j];
    }
    row.swap(next);
  }
  return row;
}

namespace {

// AttentionFlow's layered graph as a network: (l, i) for l >= 1 as in the
// header; the input layer as one source vertex whose arcs to (1, i) take
// the capacities A'_0[i, t] of the source t at hand (one graph for every
// source, without the T^2 - T arcs of the other inputs). Only the arcs
// into (L, query) of the top map: other top nodes reach no sink.
//
// Most of a dense map's arcs carry nothing in a maximum flow, and BK's time
// grows with the arcs it scans (T = 128, L = 24: 2-3 s on all of them), so
// the network starts with the first and last maps' arcs and, from each
// map in between, each row's and each column's kTopArcs largest entries.
// A flow found there is maximal in the whole graph when some minimum cut of
// the subgraph has no left-out arc leaving its source side: the cut's
// capacity is then the same in the whole graph, and bounds every flow.
// Otherwise those arcs join and the flow is found again; every
// kRoundsPerDoubling such rounds the rows' and columns' arcs kept double,
// up to all. Arcs stay in for later sources.
constexpr int kTopArcs = 8;
constexpr int kRoundsPerDoubling = 4;

class LayeredArcs {
 public:
  LayeredArcs(const std::vector<std::vector<double>>& layers, int tokens,
              int query)
      : layers_(layers), tokens_(tokens), query_(query) {
    const std::size_t top = layers.size() - 1;
    for (std::size_t l = 0; l <= top; ++l) {
      keep_.emplace_back(layers[l].size(), l == 0 || l == top);
    }
  }

  // Keeps each row's and each column's `n` largest entries of every map.
  void KeepTop(int n) {
    n = std::min(n, tokens_);
    std::vector<int> order(tokens_);
    for (std::size_t l = 1; l + 1 < layers_.size(); ++l) {
      const std::vector<double>& a = layers_[l];
      for (bool by_row : {true, false}) {
        for (int r = 0; r < tokens_; ++r) {
          auto at = [&](int c) { return by_row ? Index(r, c) : Index(c, r); };
          std::iota(order.begin(), order.end(), 0);
          std::partial_sort(order.begin(), order.begin() + n, order.end(),
                            [&](int x, int y) { return a[at(x)] > a[at(y)]; });
          for (int k = 0; k < n; ++k) keep_[l][at(order[k])] = 1;
        }
      }
    }
  }

  std::size_t vertices() const { return (layers_.size() + 1) * tokens_; }
  Vertex source() const { return 0; }
  Vertex node(std::size_t l, int i) const { return l * tokens_ + i; }
  // The capacity of the source's arc to `v` = (1, i) for input token t.
  double SourceCapacity(int t, Vertex v) const {
    return layers_[0][Index(static_cast<int>(v - tokens_), t)];
  }

  // The kept arcs, for a FlowNetwork; the source's with capacity 0.
  std::vector<Arc> Kept() const {
    std::vector<Arc> arcs(tokens_);
    for (int i = 0; i < tokens_; ++i) arcs[i] = {source(), node(1, i), 0};
    for (std::size_t l = 1; l < layers_.size(); ++l) {
      for (int i = 0; i < tokens_; ++i) {
        for (int j = 0; j < tokens_; ++j) {
          if (IsArc(l, i) && keep_[l][Index(i, j)] && Cap(l, i, j) > 0) {
            arcs.push_back({node(l, j), node(l + 1, i), Cap(l, i, j)});
          }
        }
      }
    }
    return arcs;
  }

  // Left-out arcs from the vertices where `in_cut` holds to the others.
  template <typename Side>
  std::vector<std::pair<std::size_t, std::size_t>> LeftOut(Side in_cut) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::vector<int> from, to;
    for (std::size_t l = 1; l < layers_.size(); ++l) {
      from.clear();
      to.clear();
      for (int i = 0; i < tokens_; ++i) {
        if (in_cut(node(l, i))) from.push_back(i);
        if (IsArc(l, i) && !in_cut(node(l + 1, i))) to.push_back(i);
      }
      for (int j : from) {
        for (int i : to) {
          if (!keep_[l][Index(i, j)] && Cap(l, i, j) > 0) {
            out.emplace_back(l, Index(i, j));
          }
        }
      }
    }
    return out;
  }

  void Keep(const std::vector<std::pair<std::size_t, std::size_t>>& arcs) {
    for (const auto& [l, k] : arcs) keep_[l][k] = 1;
  }

 private:
  std::size_t Index(int i, int j) const {
    return static_cast<std::size_t>(i) * tokens_ + j;
  }
  double Cap(std::size_t l, int i, int j) const {
    return layers_[l][Index(i, j)];
  }
  // Arcs into (l + 1, i) exist unless it is a top node other than query's.
  bool IsArc(std::size_t l, int i) const {
    return l + 1 < layers_.size() || i == query_;
  }

  const std::vector<std::vector<double>>& layers_;
  const int tokens_, query_;
  std::vector<std::vector<char>> keep_;  // Per layer, [T * T].
};

}  // namespace

absl::StatusOr<std::vector<double>> AttentionFlow(
    const std::vector<std::vector<double>>& layers, int tokens, int query) {
  if (absl::Status s = CheckAttentionLayers(layers, tokens, query); !s.ok()) {
    return s;
  }
  LayeredArcs arcs(layers, tokens, query);
  int top = kTopArcs, rounds = 0;
  arcs.KeepTop(top);
  auto network = std::make_unique<FlowNetwork>(arcs.Kept(), arcs.vertices());
  const Vertex sink = arcs.node(layers.size(), query);
  std::vector<double> flows(tokens);
  for (int t = 0; t < tokens; ++t) {
    for (;;) {
      network->SetOutCapacities(
          arcs.source(), [&](Vertex v) { return arcs.SourceCapacity(t, v); });
      const double flow = network->MaxFlow(arcs.source(), sink);
      // Two minimum cuts to try: BK's source tree, and all but its sink
      // tree; the one with fewer left-out arcs leaving it.
      auto missing = arcs.LeftOut(
          [&](Vertex v) { return network->tree(v) == boost::black_color; });
      if (!missing.empty()) {
        auto other = arcs.LeftOut(
            [&](Vertex v) { return network->tree(v) != boost::white_color; });
        if (other.size() < missing.size()) missing.swap(other);
      }
      if (missing.empty()) {
        flows[t] = flow;
        break;
      }
      arcs.Keep(missing);
      if (++rounds % kRoundsPerDoubling == 0) arcs.KeepTop(top *= 2);
      network = std::make_unique<FlowNetwork>(arcs.Kept(), arcs.vertices());
    }
  }
  return flows;
}

}  // namespace bertology
