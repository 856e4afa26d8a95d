#include "server/core/analysis/head_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "server/core/tokenizer/basic_tokenizer.h"

namespace bertology {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What the per-example loops need to know about each position, computed
// once per example rather than once per head.
struct Positions {
  int t = 0;
  bool pair = false;
  std::vector<int> seps, punct;
  std::vector<bool> special;  // [CLS] or [SEP], per position
  // For each position: the other segment's positions with the same id
  // (empty: no match, or not a candidate).
  std::vector<std::vector<int>> matches;
  int matched = 0;  // positions with a non-empty `matches`
  // Non-special positions of each segment.
  std::vector<int> segment_tokens[2];
};

Positions Analyse(const Encoding& e, int unk_id) {
  Positions p;
  p.t = static_cast<int>(e.tokens.size());
  p.matches.resize(p.t);
  p.special.resize(p.t);
  for (int i = 0; i < p.t; ++i) {
    const Token& tok = e.tokens[i];
    p.special[i] = tok.special;
    // The Encoding is [CLS] a [SEP] (b [SEP]): position 0 is [CLS], every
    // other special token a [SEP].
    if (tok.special) {
      if (i > 0) p.seps.push_back(i);
      continue;
    }
    if (IsPunctuationToken(tok)) p.punct.push_back(i);
    if (tok.segment == 1) p.pair = true;
    p.segment_tokens[tok.segment == 1 ? 1 : 0].push_back(i);
  }
  if (!p.pair) return p;
  for (int s = 0; s < 2; ++s) {
    for (int i : p.segment_tokens[s]) {
      const int id = e.tokens[i].id;
      if (id == unk_id) continue;
      for (int j : p.segment_tokens[1 - s]) {
        if (e.tokens[j].id == id) p.matches[i].push_back(j);
      }
      if (!p.matches[i].empty()) ++p.matched;
    }
  }
  return p;
}

double Mean(double sum, int n) { return n > 0 ? sum / n : kNaN; }

}  // namespace

bool IsPunctuationToken(const Token& token) {
  if (token.special) return false;
  std::string_view text = token.text;
  if (text.substr(0, 2) == "##") text.remove_prefix(2);
  DecodedText decoded;
  if (text.empty() || !DecodeUtf8(text, &decoded).ok()) return false;
  for (char32_t cp : decoded.chars) {
    if (!IsUnicodePunctuation(cp)) return false;
  }
  return true;
}

HeadStatsAccumulator::HeadStatsAccumulator(int num_layers, int num_heads,
                                           int unk_id)
    : layers_(num_layers), heads_(num_heads), unk_id_(unk_id) {
  const size_t n = static_cast<size_t>(layers_) * heads_;
  for (std::vector<double>* v :
       {&cls_, &sep_, &punct_, &self_, &prev_, &next_, &entropy_, &distance_,
        &match_, &own_, &diagonal_}) {
    v->assign(n, 0.0);
  }
  map_counts_.assign(n * kNumAttentionPatterns, 0);
}

absl::Status HeadStatsAccumulator::Add(
    const Encoding& encoding, const std::vector<const float*>& layer_maps,
    int64_t padded) {
  if (static_cast<int>(layer_maps.size()) != layers_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "maps for ", layer_maps.size(), " layers; the model has ", layers_));
  }
  const Positions pos = Analyse(encoding, unk_id_);
  const int t = pos.t;
  if (t == 0 || t > padded) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an encoding of ", t, " tokens for maps of ", padded, " positions"));
  }
  const double inv_t = 1.0 / t;
  int own_queries = 0;
  double share = 0;
  if (pos.pair) {
    for (int s = 0; s < 2; ++s) {
      const double n = static_cast<double>(pos.segment_tokens[s].size());
      own_queries += static_cast<int>(n);
      share += n * (n / t);
    }
  }
  for (int l = 0; l < layers_; ++l) {
    if (layer_maps[l] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no maps for layer ", l));
    }
    for (int h = 0; h < heads_; ++h) {
      const float* map =
          layer_maps[l] + static_cast<int64_t>(h) * padded * padded;
      auto p = [&](int i, int j) -> double {
        return map[static_cast<int64_t>(i) * padded + j];
      };
      double cls = 0, sep = 0, punct = 0, self = 0, prev = 0, next = 0,
             entropy = 0, distance = 0, match = 0, own = 0, diagonal = 0;
      for (int i = 0; i < t; ++i) {
        cls += p(i, 0);
        for (int j : pos.seps) sep += p(i, j);
        for (int j : pos.punct) punct += p(i, j);
        self += p(i, i);
        if (i > 0) prev += p(i, i - 1);
        if (i + 1 < t) next += p(i, i + 1);
        // The diagonals off the stripes: special keys are V's alone.
        for (int j = std::max(0, i - 1); j <= std::min(t - 1, i + 1); ++j) {
          if (!pos.special[j]) diagonal += p(i, j);
        }
        for (int j = 0; j < t; ++j) {
          const double v = p(i, j);
          if (v > 0) entropy -= v * std::log(v);
          distance += v * std::abs(i - j);
        }
        for (int j : pos.matches[i]) match += p(i, j);
      }
      if (pos.pair) {
        for (int s = 0; s < 2; ++s) {
          for (int i : pos.segment_tokens[s]) {
            for (int j : pos.segment_tokens[s]) own += p(i, j);
          }
        }
      }
      const size_t k = static_cast<size_t>(l) * heads_ + h;
      cls_[k] += cls * inv_t;
      sep_[k] += sep * inv_t;
      punct_[k] += punct * inv_t;
      self_[k] += self * inv_t;
      prev_[k] += prev * inv_t;
      next_[k] += next * inv_t;
      entropy_[k] += entropy * inv_t;
      distance_[k] += distance * inv_t;
      diagonal_[k] += diagonal * inv_t;
      if (pos.matched > 0) match_[k] += match / pos.matched;
      if (own_queries > 0) own_[k] += own / own_queries;
      // This map's class, by the same rules on this example's values.
      PatternInputs in;
      in.vertical = (cls + sep) * inv_t;
      in.diagonal = diagonal * inv_t;
      const bool pair = pos.pair && own_queries > 0;
      in.to_own_segment = pair ? own / own_queries : kNaN;
      in.own_segment_share = pair ? share / own_queries : kNaN;
      const int kind = static_cast<int>(ClassifyPattern(in));
      ++map_counts_[k * kNumAttentionPatterns + (kind - 1)];
    }
  }
  ++examples_;
  if (pos.pair && own_queries > 0) {
    ++pair_examples_;
    share_ += share / own_queries;
  }
  if (pos.matched > 0) ++examples_with_match_;
  return absl::OkStatus();
}

HeadStats HeadStatsAccumulator::Result() const {
  HeadStats r;
  r.num_layers = layers_;
  r.num_heads = heads_;
  r.examples = examples_;
  r.pair_examples = pair_examples_;
  r.examples_with_match = examples_with_match_;
  const size_t n = static_cast<size_t>(layers_) * heads_;
  auto means = [&](const std::vector<double>& sums, int count) {
    std::vector<double> out(n);
    for (size_t k = 0; k < n; ++k) out[k] = Mean(sums[k], count);
    return out;
  };
  r.to_cls = means(cls_, examples_);
  r.to_sep = means(sep_, examples_);
  r.to_punctuation = means(punct_, examples_);
  r.to_self = means(self_, examples_);
  r.to_previous = means(prev_, examples_);
  r.to_next = means(next_, examples_);
  r.entropy = means(entropy_, examples_);
  r.mean_distance = means(distance_, examples_);
  r.cross_segment_match = means(match_, examples_with_match_);
  r.to_own_segment = means(own_, pair_examples_);
  r.own_segment_share = Mean(share_, pair_examples_);
  r.diagonal = means(diagonal_, examples_);
  r.vertical.resize(n);
  r.pattern.resize(n);
  for (size_t k = 0; k < n; ++k) {
    r.vertical[k] = r.to_cls[k] + r.to_sep[k];
    PatternInputs in;
    in.vertical = r.vertical[k];
    in.diagonal = r.diagonal[k];
    in.to_own_segment = r.to_own_segment[k];
    in.own_segment_share = r.own_segment_share;
    r.pattern[k] = ClassifyPattern(in);
  }
  r.map_pattern_share.resize(map_counts_.size());
  for (size_t i = 0; i < map_counts_.size(); ++i) {
    r.map_pattern_share[i] =
        Mean(static_cast<double>(map_counts_[i]), examples_);
  }
  return r;
}

}  // namespace bertology
