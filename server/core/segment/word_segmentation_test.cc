#include "server/core/segment/word_segmentation.h"

#include <cmath>
#include <string>
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
