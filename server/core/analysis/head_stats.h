// Per-head attention statistics over a dataset (Clark et al. 2019, "What
// Does BERT Look At?", section 3), reduced one example at a time from its
// post-mask attention maps, so a dataset costs one forward pass per example
// however many heads there are, and nothing of T x T size leaves the
// server.
//
// Per example, for every head, with p the head's [T x T] map (row i = the
// query, column j = the key) over the example's T real tokens ([CLS] and
// [SEP] included, as queries and keys, as Clark et al. do):
//   to_cls        mean over queries i of p[i][0]
//   to_sep        mean over i of the sum of p[i][j] over every [SEP] j
//   to_punctuation mean over i of the sum over punctuation keys: tokens
//                 that are not special and whose text (less a leading "##")
//                 is all Unicode P* (utf8proc categories Pc Pd Ps Pe Pi Pf
//                 Po). Clark et al. counted only "." and ","; symbols such
//                 as "$" or "+" (category S*) are not punctuation here,
//                 though BERT's tokenizer splits them off as it does
//                 punctuation.
//   to_self, to_previous, to_next  mean over i of p[i][i], p[i][i-1] and
//                 p[i][i+1] (0 where the neighbour does not exist; still
//                 divided by T, as Clark et al.'s off-diagonal sums are)
//   entropy       mean over i of -sum_j p[i][j] ln p[i][j] (nats, 0 ln 0 =
//                 0), on the post-mask values as they are: a zero-masked
//                 head's rows are all 0 and have entropy 0
//   mean_distance mean over i of sum_j p[i][j] |i - j|, in tokens
//   vertical      to_cls + to_sep: V of the pattern rules
//   diagonal      mean over i of the sum of p[i][j] over j in {i - 1, i,
//                 i + 1} where token j exists and is not special ([CLS] or
//                 [SEP]): D of the pattern rules, whose special keys count
//                 toward V only (attention_pattern.h)
// Pairs only:
//   cross_segment_match  for each non-special token of one segment whose id
//                 occurs among the other segment's non-special tokens (ids
//                 of [UNK] never match: two unknown words are not the same
//                 term), the sum of its attention to those occurrences;
//                 the mean over such tokens of both segments, text_a ->
//                 text_b and text_b -> text_a together
//   to_own_segment       for each non-special query, the sum of its
//                 attention to the non-special tokens of its own segment;
//                 the mean over those queries
//   own_segment_share    the same mean of n_own / T, what to_own_segment
//                 would be under uniform attention (head-independent)
// Over the dataset each statistic is the mean of the per-example values,
// every example weighing the same (Clark et al. average per document);
// cross_segment_match over the examples with a match, to_own_segment and
// own_segment_share over the pair examples. A mean over no examples is NaN.
//
// Pattern classes (attention_pattern.h's rules): `pattern` classifies each
// head on its dataset means; `map_pattern_share` classifies each (example,
// head) map on that example's own vertical, diagonal, to_own_segment and
// own-segment share (NaN for a single text: no block), as Kovaleva et al.
// 2019 classified maps, and gives per head the share of its maps in each
// class.
#ifndef BERTOLOGY_CORE_ANALYSIS_HEAD_STATS_H_
#define BERTOLOGY_CORE_ANALYSIS_HEAD_STATS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/core/analysis/attention_pattern.h"
#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

// Dataset means, each row-major [num_layers x num_heads].
struct HeadStats {
  int num_layers = 0, num_heads = 0;
  int examples = 0;
  int pair_examples = 0;        // with a text_b
  int examples_with_match = 0;  // pairs with a token id in both segments
  std::vector<double> to_cls, to_sep, to_punctuation, to_self, to_previous,
      to_next, entropy, mean_distance, cross_segment_match, to_own_segment,
      vertical, diagonal;
  double own_segment_share = 0;               // NaN without pairs
  std::vector<AttentionPatternKind> pattern;  // ClassifyPattern of each head
  // Row-major [num_layers x num_heads x kNumAttentionPatterns]: the share
  // of the head's maps (one per example) of each class, the last index
  // being AttentionPatternKind - 1 (vertical, diagonal, vertical+diagonal,
  // block, heterogeneous); each head's shares sum to 1 (NaN without
  // examples).
  std::vector<double> map_pattern_share;
};

// Whether `token` counts as punctuation (the to_punctuation rule above).
bool IsPunctuationToken(const Token& token);

class HeadStatsAccumulator {
 public:
  // `unk_id`: the vocabulary's [UNK] id (-1: none), never a term match.
  HeadStatsAccumulator(int num_layers, int num_heads, int unk_id);

  // One example. `layer_maps[l]` points at layer l's post-mask maps of this
  // example, [num_heads, padded, padded] row-major (a row of a padded
  // batch: only the first T = encoding.tokens.size() rows and columns are
  // read). INVALID_ARGUMENT for the wrong number of layers, an empty
  // encoding or T > padded.
  absl::Status Add(const Encoding& encoding,
                   const std::vector<const float*>& layer_maps, int64_t padded);

  // The means so far, with a pattern per head.
  HeadStats Result() const;

 private:
  int layers_, heads_, unk_id_;
  int examples_ = 0, pair_examples_ = 0, examples_with_match_ = 0;
  // Sums of per-example values, [layers x heads].
  std::vector<double> cls_, sep_, punct_, self_, prev_, next_, entropy_,
      distance_, match_, own_, diagonal_;
  double share_ = 0;
  // Maps of each class, [layers x heads x kNumAttentionPatterns].
  std::vector<int64_t> map_counts_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_ANALYSIS_HEAD_STATS_H_
