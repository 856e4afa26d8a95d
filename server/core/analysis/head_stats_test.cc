// The reducer against hand-computed values on small maps, and the pattern
// rules end to end on synthetic T x T maps of each of Kovaleva et al.'s
// five kinds, built here from their definitions.
#include "server/core/analysis/head_stats.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

constexpr int kUnk = 1;

Token Tok(std::string text, int id, int segment, bool special = false) {
  Token t;
  t.text = std::move(text);
  t.id = id;
  t.segment = segment;
  t.special = special;
  return t;
}

// [CLS] a... [SEP] (b... [SEP]) with ids given per piece.
Encoding Make(const std::vector<std::pair<std::string, int>>& a,
              const std::vector<std::pair<std::string, int>>& b = {}) {
  Encoding e;
  e.tokens.push_back(Tok("[CLS]", 2, 0, true));
  for (const auto& [text, id] : a) e.tokens.push_back(Tok(text, id, 0));
  e.tokens.push_back(Tok("[SEP]", 3, 0, true));
  for (const auto& [text, id] : b) e.tokens.push_back(Tok(text, id, 1));
  if (!b.empty()) e.tokens.push_back(Tok("[SEP]", 3, 1, true));
  return e;
}

// A [T x T] map from a row function (normalised to sum 1 per row).
std::vector<float> Map(int t, const std::function<double(int, int)>& f) {
  std::vector<float> m(static_cast<size_t>(t) * t);
  for (int i = 0; i < t; ++i) {
    double sum = 0;
    for (int j = 0; j < t; ++j) sum += f(i, j);
    for (int j = 0; j < t; ++j)
      m[i * t + j] = static_cast<float>(f(i, j) / sum);
  }
  return m;
}

// One layer, one head.
HeadStats Single(const Encoding& e, const std::vector<float>& map) {
  HeadStatsAccumulator acc(1, 1, kUnk);
  const int t = static_cast<int>(e.tokens.size());
  EXPECT_TRUE(acc.Add(e, {map.data()}, t).ok());
  return acc.Result();
}

TEST(IsPunctuationToken, UnicodePCategories) {
  EXPECT_TRUE(IsPunctuationToken(Tok(".", 5, 0)));
  EXPECT_TRUE(IsPunctuationToken(Tok("...", 5, 0)));
  EXPECT_TRUE(IsPunctuationToken(Tok("##,", 5, 0)));
  EXPECT_TRUE(IsPunctuationToken(Tok("\xEF\xBC\x8C", 5, 0)));  // U+FF0C ，
  EXPECT_TRUE(IsPunctuationToken(Tok("\xE3\x80\x82", 5, 0)));  // U+3002 。
  EXPECT_FALSE(IsPunctuationToken(Tok("$", 5, 0)));            // Sc, a symbol
  EXPECT_FALSE(IsPunctuationToken(Tok("a.", 5, 0)));
  EXPECT_FALSE(IsPunctuationToken(Tok("##", 5, 0)));
  EXPECT_FALSE(IsPunctuationToken(Tok("[SEP]", 3, 0, true)));
}

// T = 4: [CLS] x . [SEP], every value checked against a hand computation.
TEST(HeadStatsAccumulator, HandComputedSingleText) {
  const Encoding e = Make({{"x", 10}, {".", 11}});
  // Rows: [CLS] -> all to itself; x -> .5 [CLS], .5 [SEP]; "." -> .25 each;
  // [SEP] -> .5 x, .5 ".".
  const std::vector<float> map = {1,   0,   0,   0,    //
                                  .5,  0,   0,   .5,   //
                                  .25, .25, .25, .25,  //
                                  0,   .5,  .5,  0};
  const HeadStats s = Single(e, map);
  EXPECT_EQ(s.examples, 1);
  EXPECT_EQ(s.pair_examples, 0);
  EXPECT_NEAR(s.to_cls[0], (1 + .5 + .25 + 0) / 4, 1e-7);
  EXPECT_NEAR(s.to_sep[0], (0 + .5 + .25 + 0) / 4, 1e-7);
  EXPECT_NEAR(s.to_punctuation[0], (0 + 0 + .25 + .5) / 4, 1e-7);
  EXPECT_NEAR(s.to_self[0], (1 + 0 + .25 + 0) / 4, 1e-7);
  EXPECT_NEAR(s.to_previous[0], (0 + .5 + .25 + .5) / 4, 1e-7);
  EXPECT_NEAR(s.to_next[0], (0 + 0 + .25 + 0) / 4, 1e-7);
  const double ln2 = std::log(2.0), ln4 = std::log(4.0);
  EXPECT_NEAR(s.entropy[0], (0 + ln2 + ln4 + ln2) / 4, 1e-7);
  // x: .5*1 + .5*2; ".": .25*(2+1+0+1); [SEP]: .5*2 + .5*1.
  EXPECT_NEAR(s.mean_distance[0], (0 + 1.5 + 1 + 1.5) / 4, 1e-7);
  EXPECT_TRUE(std::isnan(s.cross_segment_match[0]));
  EXPECT_TRUE(std::isnan(s.to_own_segment[0]));
  EXPECT_TRUE(std::isnan(s.own_segment_share));
}

// [CLS] a b [SEP] b c b [SEP]: "a" matches nothing; text_a's b matches the
// two b's of text_b; each text_b b matches text_a's b.
TEST(HeadStatsAccumulator, CrossSegmentMatchAndOwnSegment) {
  const Encoding e =
      Make({{"a", 10}, {"b", 11}}, {{"b", 11}, {"c", 12}, {"b", 11}});
  const int t = 8;
  ASSERT_EQ(e.tokens.size(), t);
  const std::vector<float> map =
      Map(t, [](int i, int j) { return 1.0 + i * t + j; });
  const HeadStats s = Single(e, map);
  auto p = [&](int i, int j) { return static_cast<double>(map[i * t + j]); };
  const double match_sum = (p(2, 4) + p(2, 6)) + p(4, 2) + p(6, 2);
  EXPECT_EQ(s.examples_with_match, 1);
  EXPECT_NEAR(s.cross_segment_match[0], match_sum / 3, 1e-6);
  // Own segment: a,b over {1,2}; b,c,b over {4,5,6}.
  double own = 0;
  for (int i : {1, 2}) own += p(i, 1) + p(i, 2);
  for (int i : {4, 5, 6}) own += p(i, 4) + p(i, 5) + p(i, 6);
  EXPECT_EQ(s.pair_examples, 1);
  EXPECT_NEAR(s.to_own_segment[0], own / 5, 1e-6);
  EXPECT_NEAR(s.own_segment_share, (2 * 2.0 / t + 3 * 3.0 / t) / 5, 1e-12);
}

TEST(HeadStatsAccumulator, UnknownPiecesNeverMatch) {
  const Encoding e = Make({{"[UNK]", kUnk}}, {{"[UNK]", kUnk}});
  const HeadStats s = Single(e, Map(5, [](int, int) { return 1.0; }));
  EXPECT_EQ(s.examples_with_match, 0);
  EXPECT_TRUE(std::isnan(s.cross_segment_match[0]));
  EXPECT_EQ(s.pair_examples, 1);
}

// Means over examples weigh each example once, whatever its length; the
// match mean covers only the examples with a match.
TEST(HeadStatsAccumulator, MeansOverExamples) {
  HeadStatsAccumulator acc(1, 1, kUnk);
  const Encoding short_e = Make({{"x", 10}});              // T = 3
  const Encoding long_e = Make({{"x", 10}}, {{"x", 10}});  // T = 5, a match
  const std::vector<float> to_cls3 = Map(3, [](int, int j) { return j == 0; });
  const std::vector<float> uniform5 = Map(5, [](int, int) { return 1.0; });
  ASSERT_TRUE(acc.Add(short_e, {to_cls3.data()}, 3).ok());
  ASSERT_TRUE(acc.Add(long_e, {uniform5.data()}, 5).ok());
  const HeadStats s = acc.Result();
  EXPECT_EQ(s.examples, 2);
  EXPECT_NEAR(s.to_cls[0], (1.0 + 0.2) / 2, 1e-7);
  EXPECT_NEAR(s.cross_segment_match[0], 0.2, 1e-7);
  EXPECT_EQ(s.examples_with_match, 1);
}

// A row of a padded batch: only the top-left T x T block is read, per head
// and per layer.
TEST(HeadStatsAccumulator, PaddedRowsAndLayout) {
  const Encoding e = Make({{"x", 10}});  // T = 3
  const int padded = 5, heads = 2, layers = 2;
  std::vector<std::vector<float>> maps(
      layers, std::vector<float>(heads * padded * padded, 7.0f));
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          // Head (l, h) puts everything on key l*2+h mod 3.
          maps[l][(h * padded + i) * padded + j] = j == (l * 2 + h) % 3;
        }
      }
    }
  }
  HeadStatsAccumulator acc(layers, heads, kUnk);
  ASSERT_TRUE(acc.Add(e, {maps[0].data(), maps[1].data()}, padded).ok());
  const HeadStats s = acc.Result();
  EXPECT_EQ(s.to_cls, (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(s.to_sep, (std::vector<double>{0, 0, 1, 0}));
  EXPECT_NEAR(s.entropy[1], 0, 1e-12);
}

TEST(HeadStatsAccumulator, RefusesMismatchedInput) {
  HeadStatsAccumulator acc(2, 1, kUnk);
  const Encoding e = Make({{"x", 10}});
  const std::vector<float> m(9, 1.0f / 3);
  EXPECT_THAT(std::string(acc.Add(e, {m.data()}, 3).message()),
              HasSubstr("1 layers; the model has 2"));
  EXPECT_THAT(std::string(acc.Add(e, {m.data(), m.data()}, 2).message()),
              HasSubstr("3 tokens for maps of 2"));
  EXPECT_FALSE(acc.Add(Encoding{}, {m.data(), m.data()}, 3).ok());
  EXPECT_EQ(acc.Result().examples, 0);
  EXPECT_TRUE(std::isnan(acc.Result().to_cls[0]));
}

// ------------------------------------------------ synthetic maps per kind
//
// A pair [CLS] a1..a5 [SEP] b1..b5 [SEP] (T = 13), so the block rule can
// apply; each map is built from its kind's definition and must come out as
// that kind, and only that kind's rule must hold.

Encoding PairForPatterns() {
  return Make({{"w", 10}, {"x", 11}, {"y", 12}, {"z", 13}, {"v", 14}},
              {{"p", 20}, {"q", 21}, {"r", 22}, {"s", 23}, {"u", 24}});
}

AttentionPatternKind KindOf(const std::function<double(int, int)>& f) {
  const Encoding e = PairForPatterns();
  const int t = static_cast<int>(e.tokens.size());
  return Single(e, Map(t, f)).pattern[0];
}

bool IsSep(int j) { return j == 6 || j == 12; }
bool IsSpecial(int j) { return j == 0 || IsSep(j); }
int SegmentOf(int j) { return j <= 6 ? 0 : 1; }

TEST(PatternsOnSyntheticMaps, Vertical) {
  // Every token: 0.9 on [CLS] and the [SEP]s, the rest spread evenly.
  EXPECT_EQ(KindOf([](int, int j) { return IsSpecial(j) ? 0.3 : 0.01; }),
            AttentionPatternKind::kVertical);
}

TEST(PatternsOnSyntheticMaps, Diagonal) {
  // Previous and next token (or self at the edges).
  EXPECT_EQ(KindOf([](int i, int j) {
              return std::abs(i - j) == 1 ? 1.0 : (i == j ? 0.2 : 0.01);
            }),
            AttentionPatternKind::kDiagonal);
}

TEST(PatternsOnSyntheticMaps, VerticalDiagonal) {
  // Half on the stripes, half on the neighbours.
  EXPECT_EQ(KindOf([](int i, int j) {
              if (IsSpecial(j)) return 1.0;
              return std::abs(i - j) == 1 ? 1.5 : 0.02;
            }),
            AttentionPatternKind::kVerticalDiagonal);
}

TEST(PatternsOnSyntheticMaps, Block) {
  // Non-special tokens spread over their own sentence's tokens.
  EXPECT_EQ(KindOf([](int i, int j) {
              if (IsSpecial(i)) return 1.0;
              return !IsSpecial(j) && SegmentOf(i) == SegmentOf(j) ? 1.0 : 0.02;
            }),
            AttentionPatternKind::kBlock);
}

TEST(PatternsOnSyntheticMaps, Heterogeneous) {
  // Uniform: no stripe, no diagonal, no block.
  EXPECT_EQ(KindOf([](int, int) { return 1.0; }),
            AttentionPatternKind::kHeterogeneous);
  // Scattered: each token to a far-away one in the other sentence.
  EXPECT_EQ(KindOf([](int i, int j) { return j == (i + 6) % 13 ? 1.0 : 0.05; }),
            AttentionPatternKind::kHeterogeneous);
}

TEST(PatternsOnSyntheticMaps, BlockNeedsPairs) {
  // Within-sentence attention in a single text (one segment of ten words)
  // is no block: the rule needs a second segment to be above.
  std::vector<std::pair<std::string, int>> words;
  for (int k = 0; k < 10; ++k) words.push_back({"w", 10 + k});
  const Encoding e = Make(words);
  const int t = 12;
  const std::vector<float> m = Map(t, [](int i, int j) {
    const bool special_i = i == 0 || i == t - 1,
               special_j = j == 0 || j == t - 1;
    return special_i ? 1.0 : (special_j ? 0.02 : 1.0);
  });
  EXPECT_EQ(Single(e, m).pattern[0], AttentionPatternKind::kHeterogeneous);
}

// ------------------------------------------- special keys count as V only
//
// The [SEP] stripe and the diagonals share cells: the [SEP] row's self, the
// row before a [SEP]'s next, the row after the middle [SEP]'s previous.
// Those cells count toward V alone, so a head that puts everything on a
// [SEP] is vertical and nothing else, however short the input.

// [CLS] a... [SEP] b... [SEP] with `na` and `nb` word pieces.
Encoding ShortPair(int na, int nb) {
  std::vector<std::pair<std::string, int>> a, b;
  for (int k = 0; k < na; ++k) a.push_back({"a", 10 + k});
  for (int k = 0; k < nb; ++k) b.push_back({"b", 30 + k});
  return Make(a, b);
}

TEST(PatternsOnSyntheticMaps, AllOnSepIsVerticalOnlyAtSmallT) {
  // T = 7: [CLS] a a [SEP] b b [SEP]; every row on its segment's [SEP].
  const Encoding e = ShortPair(2, 2);
  const int t = 7;
  const std::vector<float> m =
      Map(t, [](int i, int j) { return j == (i <= 3 ? 3 : 6) ? 1.0 : 0.0; });
  const HeadStats s = Single(e, m);
  EXPECT_NEAR(s.vertical[0], 1.0, 1e-7);
  EXPECT_NEAR(s.diagonal[0], 0.0, 1e-7);
  // Clark's neighbour statistics still see the [SEP] cells (rows 2 and 5
  // to the next token, rows 3 and 6 to themselves) ...
  EXPECT_NEAR(s.to_next[0], 2.0 / t, 1e-7);
  EXPECT_NEAR(s.to_self[0], 2.0 / t, 1e-7);
  // ... which the rules used to add to V's: D = 4/7 made it
  // vertical+diagonal.
  EXPECT_EQ(s.pattern[0], AttentionPatternKind::kVertical);
  const std::vector<double> only_vertical = {1, 0, 0, 0, 0};
  EXPECT_EQ(s.map_pattern_share, only_vertical);
}

TEST(PatternsOnSyntheticMaps, AllOnSepIsVerticalAtEveryLength) {
  for (int n = 1; n <= 6; ++n) {
    for (bool pair : {false, true}) {
      const Encoding e = pair ? ShortPair(n, n) : ShortPair(n, 0);
      const int t = static_cast<int>(e.tokens.size());
      const int mid = n + 1;  // the first [SEP]
      const std::vector<float> m = Map(t, [&](int i, int j) {
        return j == (i <= mid ? mid : t - 1) ? 1.0 : 0.0;
      });
      const HeadStats s = Single(e, m);
      EXPECT_EQ(s.pattern[0], AttentionPatternKind::kVertical)
          << "T = " << t << " diagonal " << s.diagonal[0];
    }
  }
}

TEST(PatternsOnSyntheticMaps, SpecialKeysAreVerticalWordKeysDiagonal) {
  // [CLS] x y [SEP]. All on [CLS]: V (its own row's self included).
  const Encoding e = Make({{"x", 10}, {"y", 11}});
  HeadStats s = Single(e, Map(4, [](int, int j) { return j == 0 ? 1.0 : 0; }));
  EXPECT_NEAR(s.vertical[0], 1.0, 1e-7);
  EXPECT_NEAR(s.diagonal[0], 0.0, 1e-7);
  EXPECT_EQ(s.pattern[0], AttentionPatternKind::kVertical);
  // Self everywhere: the word rows are D, the [CLS] and [SEP] rows V.
  s = Single(e, Map(4, [](int i, int j) { return i == j ? 1.0 : 0; }));
  EXPECT_NEAR(s.to_self[0], 1.0, 1e-7);
  EXPECT_NEAR(s.diagonal[0], 0.5, 1e-7);
  EXPECT_NEAR(s.vertical[0], 0.5, 1e-7);
  EXPECT_EQ(s.pattern[0], AttentionPatternKind::kVerticalDiagonal);
  // The special rows attending to a neighbouring word: D too.
  s = Single(e, Map(4, [](int i, int j) {
               return j == (i == 0 ? 1 : i == 3 ? 2 : i) ? 1.0 : 0;
             }));
  EXPECT_NEAR(s.diagonal[0], 1.0, 1e-7);
  EXPECT_EQ(s.pattern[0], AttentionPatternKind::kDiagonal);
}

// ------------------------------------------------- per-map classification

// A head vertical on one example and diagonal on the other: half its maps
// in each class, while its means (V = D = 0.5) make it vertical+diagonal.
TEST(MapPatternShare, EachMapClassifiedOnItsOwnValues) {
  const Encoding e = Make({{"x", 10}, {"y", 11}, {"z", 12}});  // T = 5
  const std::vector<float> on_sep =
      Map(5, [](int, int j) { return j == 4 ? 1.0 : 0; });
  const std::vector<float> diagonal = Map(5, [](int i, int j) {
    return j == (i == 0 ? 1 : i == 4 ? 3 : i) ? 1.0 : 0;
  });
  // Two heads: head 0 on_sep then diagonal; head 1 diagonal twice.
  std::vector<float> first(on_sep), second(diagonal);
  first.insert(first.end(), diagonal.begin(), diagonal.end());
  second.insert(second.end(), diagonal.begin(), diagonal.end());
  HeadStatsAccumulator acc(1, 2, kUnk);
  ASSERT_TRUE(acc.Add(e, {first.data()}, 5).ok());
  ASSERT_TRUE(acc.Add(e, {second.data()}, 5).ok());
  const HeadStats s = acc.Result();
  EXPECT_EQ(s.pattern[0], AttentionPatternKind::kVerticalDiagonal);
  EXPECT_EQ(s.pattern[1], AttentionPatternKind::kDiagonal);
  ASSERT_EQ(s.map_pattern_share.size(), 2u * kNumAttentionPatterns);
  // [head][vertical, diagonal, vertical+diagonal, block, heterogeneous]
  const std::vector<double> want = {0.5, 0.5, 0, 0, 0,  //
                                    0,   1,   0, 0, 0};
  EXPECT_EQ(s.map_pattern_share, want);
}

// The block rule per map uses that example's own share, and a single text
// (no pair) is never a block.
TEST(MapPatternShare, BlockOnPairsOnly) {
  const Encoding pair = PairForPatterns();  // T = 13
  const std::vector<float> block = Map(13, [](int i, int j) {
    if (IsSpecial(i)) return 1.0;
    return !IsSpecial(j) && SegmentOf(i) == SegmentOf(j) ? 1.0 : 0.02;
  });
  std::vector<std::pair<std::string, int>> words;
  for (int k = 0; k < 10; ++k) words.push_back({"w", 10 + k});
  const Encoding single = Make(words);  // T = 12
  const std::vector<float> within = Map(12, [](int i, int j) {
    const bool si = i == 0 || i == 11, sj = j == 0 || j == 11;
    return si ? 1.0 : (sj ? 0.02 : 1.0);
  });
  HeadStatsAccumulator acc(1, 1, kUnk);
  ASSERT_TRUE(acc.Add(pair, {block.data()}, 13).ok());
  ASSERT_TRUE(acc.Add(single, {within.data()}, 12).ok());
  const HeadStats s = acc.Result();
  const std::vector<double> want = {0, 0, 0, 0.5, 0.5};
  EXPECT_EQ(s.map_pattern_share, want);
}

TEST(MapPatternShare, NaNWithoutExamples) {
  HeadStatsAccumulator acc(1, 1, kUnk);
  const HeadStats s = acc.Result();
  ASSERT_EQ(s.map_pattern_share.size(), 5u);
  for (double v : s.map_pattern_share) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace bertology
