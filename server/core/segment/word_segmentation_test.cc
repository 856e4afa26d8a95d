#include "server/core/segment/word_segmentation.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

using ::testing::HasSubstr;

Token Special(const std::string& text, int segment) {
  Token t;
  t.text = text;
  t.special = true;
  t.segment = segment;
  return t;
}

Token Char(const std::string& text, int segment, int at) {
  Token t;
  t.text = text;
  t.segment = segment;
  t.char_start = at;
  t.char_end = at + 1;
  return t;
}

// [CLS] a b c [SEP] d e [SEP]: text_a "abc" = "ab" + "c", text_b "de".
Encoding PairEncoding() {
  Encoding e;
  e.tokens = {Special("[CLS]", 0), Char("a", 0, 0),     Char("##b", 0, 1),
              Char("c", 0, 2),     Special("[SEP]", 0), Char("d", 1, 0),
              Char("e", 1, 1),     Special("[SEP]", 1)};
  return e;
}

// A [T x T] map whose row i puts all its mass on target[i].
std::vector<float> OneHot(int t, const std::vector<int>& target) {
  std::vector<float> m(t * t, 0.0f);
  for (int i = 0; i < t; ++i) m[i * t + target[i]] = 1.0f;
  return m;
}

TEST(CheckWordsTest, RefusesMismatchEmptyAndNoWords) {
  EXPECT_TRUE(CheckWords("abc", {"ab", "c"}, "examples[0].words_a").ok());
  absl::Status s = CheckWords("abc", {"ab", "d"}, "examples[0].words_a");
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("examples[0].words_a"));
  s = CheckWords("abc", {"abc", ""}, "examples[1].words_b");
  EXPECT_THAT(s.message(), HasSubstr("examples[1].words_b[1]"));
  s = CheckWords("abc", {}, "w");
  EXPECT_THAT(s.message(), HasSubstr("w is empty"));
}

TEST(SegmentationExampleTest, GoldEndsAndNeighbours) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_EQ(ex->chars.size(), 5u);
  EXPECT_EQ(ex->length, 8);
  const std::vector<bool> gold = {false, true, true, false, true};
  const std::vector<bool> next = {true, true, false, true, false};
  for (size_t c = 0; c < 5; ++c) {
    EXPECT_EQ(ex->chars[c].gold_end, gold[c]) << c;
    EXPECT_EQ(ex->chars[c].next_is_char, next[c]) << c;
  }
  EXPECT_TRUE(ex->is_sep[4]);
  EXPECT_TRUE(ex->is_sep[7]);
  EXPECT_FALSE(ex->is_sep[0]);
}

TEST(SegmentationExampleTest, SkipsPiecesOfSeveralCharacters) {
  Encoding e;
  Token ab = Char("ab", 0, 0);
  ab.char_end = 2;
  e.tokens = {Special("[CLS]", 0), ab, Char("##c", 0, 2), Special("[SEP]", 0)};
  auto ex = MakeSegmentationExample(e, {"abc"}, {});
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->skipped_pieces, 1);
  ASSERT_EQ(ex->chars.size(), 1u);
  EXPECT_EQ(ex->chars[0].position, 2);
  EXPECT_TRUE(ex->chars[0].gold_end);
}

// Two layers of one head: layer 0 segments perfectly (internal -> next,
// end -> [SEP]); layer 1 never does (everything to [CLS]).
TEST(SegmentationAccumulatorTest, PerfectAndNeverHeads) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  const std::vector<float> perfect = OneHot(8, {0, 2, 4, 4, 0, 6, 7, 0});
  const std::vector<float> never = OneHot(8, {0, 0, 0, 0, 0, 0, 0, 0});
  SegmentationAccumulator acc(2, 1);
  std::vector<std::vector<CharPrediction>> predicted;
  ASSERT_TRUE(acc.Add(*ex, {perfect.data(), never.data()}, 8, &predicted).ok());
  ASSERT_EQ(predicted.size(), 2u);
  EXPECT_EQ(predicted[0][0], CharPrediction::kWordInternal);
  EXPECT_EQ(predicted[0][1], CharPrediction::kWordEnd);
  EXPECT_EQ(predicted[1][0], CharPrediction::kNone);
  SegmentationScores s = acc.Result(1);
  EXPECT_EQ(s.characters, 5);
  EXPECT_EQ(s.gold_ends, 3);
  EXPECT_DOUBLE_EQ(s.precision[0], 1.0);
  EXPECT_DOUBLE_EQ(s.recall[0], 1.0);
  EXPECT_DOUBLE_EQ(s.f1[0], 1.0);
  EXPECT_DOUBLE_EQ(s.accuracy[0], 1.0);
  EXPECT_TRUE(std::isnan(s.precision[1]));  // predicts no end
  EXPECT_DOUBLE_EQ(s.recall[1], 0.0);
  EXPECT_DOUBLE_EQ(s.f1[1], 0.0);
  EXPECT_DOUBLE_EQ(s.accuracy[1], 0.0);
  EXPECT_DOUBLE_EQ(s.mcc[0], 1.0);
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[0], 1.0);
  EXPECT_DOUBLE_EQ(s.mcc[1], 0.0);  // predicts no end at all
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[1], 0.0);
  EXPECT_EQ(s.ranking, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.oracle_all, 1.0);
  EXPECT_DOUBLE_EQ(s.oracle_top, 1.0);
}

// A next-token head is not credited at word ends: the next token there is
// a character of the next word, not [SEP].
TEST(SegmentationAccumulatorTest, NextTokenHeadAndOracle) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  const std::vector<float> next = OneHot(8, {1, 2, 3, 4, 5, 6, 7, 7});
  const std::vector<float> sep = OneHot(8, {4, 4, 4, 4, 4, 4, 4, 4});
  SegmentationAccumulator acc(1, 2);
  std::vector<float> layer(next);
  layer.insert(layer.end(), sep.begin(), sep.end());
  ASSERT_TRUE(acc.Add(*ex, {layer.data()}, 8).ok());
  SegmentationScores s = acc.Result(1);
  // next: a->b internal (right), b->c none (gold end: wrong), c->[SEP] end
  // (right), d->e internal (right), e->[SEP] end (right).
  EXPECT_DOUBLE_EQ(s.accuracy[0], 4.0 / 5);
  EXPECT_DOUBLE_EQ(s.precision[0], 1.0);
  EXPECT_DOUBLE_EQ(s.recall[0], 2.0 / 3);
  // sep: every character "end": 3 of 5 right; P 3/5, R 1.
  EXPECT_DOUBLE_EQ(s.accuracy[1], 3.0 / 5);
  EXPECT_DOUBLE_EQ(s.precision[1], 3.0 / 5);
  EXPECT_DOUBLE_EQ(s.f1[1], 6.0 / 8);
  EXPECT_DOUBLE_EQ(s.f1[0], 4.0 / 5);
  EXPECT_EQ(s.ranking, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.oracle_top, 4.0 / 5);  // the next-token head alone
  EXPECT_DOUBLE_EQ(s.oracle_all, 1.0);      // b is right under the sep head
  // ... which the two trivial heads reach by themselves: these two heads
  // are the baselines, and their oracle is reported beside it.
  EXPECT_DOUBLE_EQ(s.oracle_baselines, 1.0);
  EXPECT_EQ(s.always_next.correct, s.correct[0]);
  EXPECT_EQ(s.always_sep.correct, s.correct[1]);
}

// The baselines are the rule applied to a planted next-token map and a
// planted all-[SEP] map, scored by the same scorer on the same characters:
// every number equals those heads' own.
TEST(SegmentationAccumulatorTest, BaselinesAreTheTrivialHeadsScoredAlike) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  const std::vector<float> next = OneHot(8, {1, 2, 3, 4, 5, 6, 7, 7});
  const std::vector<float> sep = OneHot(8, {7, 7, 7, 7, 7, 7, 7, 7});
  EXPECT_EQ(PredictAlwaysNext(*ex), PredictCharacters(*ex, next.data(), 8));
  EXPECT_EQ(PredictAlwaysSep(*ex), PredictCharacters(*ex, sep.data(), 8));
  SegmentationAccumulator acc(2, 1);
  // Two examples, so the sums run over examples too.
  ASSERT_TRUE(acc.Add(*ex, {next.data(), sep.data()}, 8).ok());
  ASSERT_TRUE(acc.Add(*ex, {next.data(), sep.data()}, 8).ok());
  const SegmentationScores s = acc.Result(2);
  for (const auto& [k, b] :
       {std::pair<int, const SegmentScore*>{0, &s.always_next},
        {1, &s.always_sep}}) {
    SCOPED_TRACE(k);
    EXPECT_EQ(b->true_ends, s.true_ends[k]);
    EXPECT_EQ(b->predicted_ends, s.predicted_ends[k]);
    EXPECT_EQ(b->correct, s.correct[k]);
    EXPECT_DOUBLE_EQ(b->precision, s.precision[k]);
    EXPECT_DOUBLE_EQ(b->recall, s.recall[k]);
    EXPECT_DOUBLE_EQ(b->f1, s.f1[k]);
    EXPECT_DOUBLE_EQ(b->accuracy, s.accuracy[k]);
    EXPECT_DOUBLE_EQ(b->mcc, s.mcc[k]);
    EXPECT_DOUBLE_EQ(b->balanced_accuracy, s.balanced_accuracy[k]);
  }
  // always-next: tp 2, fp 0, fn 1, tn 2 per example (b is a gold end
  // followed by a character: "internal", wrong).
  EXPECT_DOUBLE_EQ(s.always_next.mcc,
                   (4.0 * 4 - 0) / std::sqrt(4.0 * 6 * 4 * 6));
  EXPECT_DOUBLE_EQ(s.always_next.balanced_accuracy, (2.0 / 3 + 1.0) / 2);
  // always-[SEP]: a constant prediction correlates with nothing; half of
  // the two gold classes is right.
  EXPECT_DOUBLE_EQ(s.always_sep.mcc, 0.0);
  EXPECT_DOUBLE_EQ(s.always_sep.balanced_accuracy, 0.5);
  EXPECT_DOUBLE_EQ(s.always_sep.recall, 1.0);
}

// The reviewer's case in small: the all-[SEP] head has the best F1 (0.75)
// and would top an F1 ranking; a head that finds one word end and every
// internal character has a lower F1 (0.5) but a positive MCC, and ranks
// first. The view's head and best_heads follow this ranking.
TEST(SegmentationAccumulatorTest, RanksByMccNotF1) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  const std::vector<float> sep = OneHot(8, {4, 4, 4, 4, 4, 4, 4, 4});
  // a -> b (internal, right), b -> [CLS] (none; gold end), c -> [SEP]
  // (end, right), d -> e (internal, right), e -> [CLS] (none; gold end).
  const std::vector<float> some = OneHot(8, {0, 2, 0, 4, 0, 6, 0, 0});
  SegmentationAccumulator acc(1, 2);
  std::vector<float> layer(sep);
  layer.insert(layer.end(), some.begin(), some.end());
  ASSERT_TRUE(acc.Add(*ex, {layer.data()}, 8).ok());
  const SegmentationScores s = acc.Result(1);
  EXPECT_DOUBLE_EQ(s.f1[0], 6.0 / 8);
  EXPECT_DOUBLE_EQ(s.f1[1], 2.0 / 4);
  EXPECT_DOUBLE_EQ(s.mcc[0], 0.0);
  // tp 1, fp 0, fn 2, tn 2.
  EXPECT_DOUBLE_EQ(s.mcc[1], 2.0 / std::sqrt(1.0 * 3 * 2 * 4));
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[1], (1.0 / 3 + 1.0) / 2);
  EXPECT_EQ(s.ranking, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(s.oracle_top, 3.0 / 5);
}

// Equal MCC: balanced accuracy decides (a head that predicts no internal
// character loses to one that predicts them), then the head index.
TEST(SegmentationAccumulatorTest, TiesOnMccGoToBalancedAccuracyThenIndex) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  const std::vector<float> ends_only = OneHot(8, {0, 0, 4, 4, 0, 0, 7, 0});
  const std::vector<float> perfect = OneHot(8, {0, 2, 4, 4, 0, 6, 7, 0});
  SegmentationAccumulator acc(1, 3);
  std::vector<float> layer(ends_only);
  layer.insert(layer.end(), perfect.begin(), perfect.end());
  layer.insert(layer.end(), perfect.begin(), perfect.end());
  ASSERT_TRUE(acc.Add(*ex, {layer.data()}, 8).ok());
  const SegmentationScores s = acc.Result(3);
  EXPECT_DOUBLE_EQ(s.mcc[0], 1.0);
  EXPECT_DOUBLE_EQ(s.mcc[1], 1.0);
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[0], 0.5);
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[1], 1.0);
  EXPECT_EQ(s.ranking, (std::vector<int>{1, 2, 0}));
}

// The baselines' oracle is measured, not assumed: where the next piece is
// not one character, always-next predicts nothing, and an internal
// character is right under neither baseline.
TEST(SegmentationAccumulatorTest, BaselinesOracleBelowOneOnLongerPieces) {
  Encoding e;
  Token bc = Char("##bc", 0, 1);
  bc.char_end = 3;
  e.tokens = {Special("[CLS]", 0), Char("a", 0, 0), bc, Char("##d", 0, 3),
              Special("[SEP]", 0)};
  auto ex = MakeSegmentationExample(e, {"abcd"}, {});
  ASSERT_TRUE(ex.ok());
  ASSERT_EQ(ex->chars.size(), 2u);  // a (internal) and d (end)
  EXPECT_EQ(PredictAlwaysNext(*ex),
            (std::vector<CharPrediction>{CharPrediction::kNone,
                                         CharPrediction::kWordEnd}));
  SegmentationAccumulator acc(1, 1);
  const std::vector<float> m = OneHot(5, {0, 0, 0, 4, 0});
  ASSERT_TRUE(acc.Add(*ex, {m.data()}, 5).ok());
  const SegmentationScores s = acc.Result(1);
  EXPECT_DOUBLE_EQ(s.oracle_baselines, 0.5);
  EXPECT_DOUBLE_EQ(s.always_next.accuracy, 0.5);
  // tp 1, fp 0, fn 0, tn 1: a perfect correlation of ends, but only half
  // of the balanced accuracy (the internal character gets no prediction).
  EXPECT_DOUBLE_EQ(s.always_next.mcc, 1.0);
  EXPECT_DOUBLE_EQ(s.always_next.balanced_accuracy, 0.5);
}

// MCC and balanced accuracy where they are undefined or degenerate.
TEST(SegmentationAccumulatorTest, ChanceScoresAtTheEdges) {
  SegmentationAccumulator empty(1, 1);
  SegmentationScores s = empty.Result(1);
  EXPECT_TRUE(std::isnan(s.mcc[0]));
  EXPECT_TRUE(std::isnan(s.balanced_accuracy[0]));
  EXPECT_TRUE(std::isnan(s.always_next.mcc));
  EXPECT_TRUE(std::isnan(s.oracle_baselines));
  // Only one-character words: no internal class; balanced accuracy is the
  // word-end recall, MCC 0 (the gold is constant).
  Encoding e;
  e.tokens = {Special("[CLS]", 0), Char("a", 0, 0), Char("b", 0, 1),
              Special("[SEP]", 0)};
  auto ex = MakeSegmentationExample(e, {"a", "b"}, {});
  ASSERT_TRUE(ex.ok());
  SegmentationAccumulator acc(1, 1);
  const std::vector<float> m = OneHot(4, {0, 3, 0, 0});  // a end, b none
  ASSERT_TRUE(acc.Add(*ex, {m.data()}, 4).ok());
  s = acc.Result(1);
  EXPECT_DOUBLE_EQ(s.balanced_accuracy[0], 0.5);
  EXPECT_DOUBLE_EQ(s.mcc[0], 0.0);
  EXPECT_DOUBLE_EQ(s.always_sep.balanced_accuracy, 1.0);
}

// Ties go to the lowest index: [CLS] = [SEP] -> [CLS] (no prediction);
// next = [SEP] with next before -> internal.
TEST(SegmentationAccumulatorTest, TiesGoToTheLowestIndex) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  std::vector<float> m(64, 0.0f);
  m[1 * 8 + 2] = 0.5f;  // a: next and [SEP] tie
  m[1 * 8 + 4] = 0.5f;
  m[2 * 8 + 0] = 0.5f;  // b: [CLS] and [SEP] tie
  m[2 * 8 + 4] = 0.5f;
  const std::vector<CharPrediction> p = PredictCharacters(*ex, m.data(), 8);
  EXPECT_EQ(p[0], CharPrediction::kWordInternal);
  EXPECT_EQ(p[1], CharPrediction::kNone);
  // Rows of zeros (a zero-masked head): argmax [CLS], no prediction.
  EXPECT_EQ(p[2], CharPrediction::kNone);
}

TEST(SegmentationAccumulatorTest, PaddedMapsAndLayerCount) {
  auto ex = MakeSegmentationExample(PairEncoding(), {"ab", "c"}, {"de"});
  ASSERT_TRUE(ex.ok());
  // Padded to 10: padding columns carry mass the rule must not read.
  std::vector<float> m(100, 0.0f);
  const std::vector<int> target = {0, 2, 4, 4, 0, 6, 7, 0};
  for (int i = 0; i < 8; ++i) {
    m[i * 10 + target[i]] = 0.6f;
    m[i * 10 + 9] = 0.9f;
  }
  SegmentationAccumulator acc(1, 1);
  ASSERT_TRUE(acc.Add(*ex, {m.data()}, 10).ok());
  EXPECT_DOUBLE_EQ(acc.Result(5).f1[0], 1.0);
  EXPECT_EQ(acc.Result(5).top_k, 1);
  EXPECT_FALSE(acc.Add(*ex, {m.data(), m.data()}, 10).ok());
  EXPECT_FALSE(acc.Add(*ex, {m.data()}, 7).ok());
}

}  // namespace
}  // namespace bertology
