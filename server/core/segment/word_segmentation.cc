#include "server/core/segment/word_segmentation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace bertology {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Ratio(int64_t num, int64_t den) {
  return den == 0 ? kNaN : static_cast<double>(num) / den;
}

// For each code point of the segment's text, whether it is the last of its
// word.
absl::StatusOr<std::vector<bool>> WordEnds(
    const std::vector<std::string>& words) {
  std::vector<bool> ends;
  for (const std::string& w : words) {
    DecodedText d;
    absl::Status s = DecodeUtf8(w, &d);
    if (!s.ok()) return s;
    for (size_t i = 0; i < d.chars.size(); ++i) {
      ends.push_back(i + 1 == d.chars.size());
    }
  }
  return ends;
}

}  // namespace

absl::Status CheckWords(const std::string& text,
                        const std::vector<std::string>& words,
                        const std::string& field) {
  if (words.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  }
  std::string joined;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "] is an empty word"));
    }
    joined += words[i];
  }
  if (joined != text) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " concatenated (\"", joined,
                     "\") is not the text it segments (\"", text, "\")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SegmentationExample> MakeSegmentationExample(
    const Encoding& encoding, const std::vector<std::string>& words_a,
    const std::vector<std::string>& words_b) {
  std::vector<bool> ends[2];
  auto a = WordEnds(words_a);
  if (!a.ok()) return a.status();
  ends[0] = *std::move(a);
  auto b = WordEnds(words_b);
  if (!b.ok()) return b.status();
  ends[1] = *std::move(b);

  SegmentationExample ex;
  const std::vector<Token>& tokens = encoding.tokens;
  ex.length = static_cast<int>(tokens.size());
  ex.is_sep.resize(tokens.size());
  auto is_char = [&](size_t i) {
    const Token& t = tokens[i];
    return !t.special && t.char_end - t.char_start == 1 && t.segment >= 0 &&
           t.segment <= 1 &&
           t.char_start < static_cast<int>(ends[t.segment].size());
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    ex.is_sep[i] = tokens[i].special && tokens[i].text == "[SEP]";
    if (tokens[i].special) continue;
    if (!is_char(i)) {
      ++ex.skipped_pieces;
      continue;
    }
    SegmentChar c;
    c.position = static_cast<int>(i);
    c.gold_end = ends[tokens[i].segment][tokens[i].char_start];
    c.next_is_char = i + 1 < tokens.size() && is_char(i + 1) &&
                     tokens[i + 1].segment == tokens[i].segment;
    ex.chars.push_back(c);
  }
  return ex;
}

CharPrediction PredictFromArgmax(const SegmentationExample& ex,
                                 const SegmentChar& c, int j) {
  if (j >= 0 && j < ex.length && ex.is_sep[j]) return CharPrediction::kWordEnd;
  if (j == c.position + 1 && c.next_is_char) {
    return CharPrediction::kWordInternal;
  }
  return CharPrediction::kNone;
}

std::vector<CharPrediction> PredictCharacters(const SegmentationExample& ex,
                                              const float* map,
                                              int64_t padded) {
  std::vector<CharPrediction> out;
  out.reserve(ex.chars.size());
  for (const SegmentChar& c : ex.chars) {
    const float* row = map + c.position * padded;
    // Strictly greater: ties go to the lowest index.
    int best = 0;
    for (int j = 1; j < ex.length; ++j) {
      if (row[j] > row[best]) best = j;
    }
    out.push_back(PredictFromArgmax(ex, c, best));
  }
  return out;
}

std::vector<CharPrediction> PredictAlwaysNext(const SegmentationExample& ex) {
  std::vector<CharPrediction> out;
  out.reserve(ex.chars.size());
  for (const SegmentChar& c : ex.chars) {
    out.push_back(PredictFromArgmax(ex, c, c.position + 1));
  }
  return out;
}

std::vector<CharPrediction> PredictAlwaysSep(const SegmentationExample& ex) {
  return std::vector<CharPrediction>(ex.chars.size(), CharPrediction::kWordEnd);
}

bool SegmentationAccumulator::Counts::Add(bool gold_end, CharPrediction p) {
  const bool end = p == CharPrediction::kWordEnd;
  tp += gold_end && end;
  fp += !gold_end && end;
  fn += gold_end && !end;
  const bool right = gold_end ? end : p == CharPrediction::kWordInternal;
  correct += right;
  internal_right += !gold_end && right;
  return right;
}

SegmentationAccumulator::SegmentationAccumulator(int num_layers, int num_heads)
    : layers_(num_layers),
      heads_(num_heads),
      counts_(static_cast<size_t>(num_layers) * num_heads) {}

absl::Status SegmentationAccumulator::Add(
    const SegmentationExample& ex, const std::vector<const float*>& maps,
    int64_t padded, std::vector<std::vector<CharPrediction>>* predictions) {
  if (static_cast<int>(maps.size()) != layers_) {
    return absl::InternalError(absl::StrCat("segmentation got ", maps.size(),
                                            " layers' maps, not ", layers_));
  }
  if (padded < ex.length) {
    return absl::InternalError(absl::StrCat(
        "maps of ", padded, " positions for ", ex.length, " tokens"));
  }
  const int n = layers_ * heads_;
  const size_t base = right_.size();
  right_.resize(base + ex.chars.size() * n);
  if (predictions != nullptr) predictions->assign(n, {});
  for (int l = 0; l < layers_; ++l) {
    for (int h = 0; h < heads_; ++h) {
      const int k = l * heads_ + h;
      std::vector<CharPrediction> p =
          PredictCharacters(ex, maps[l] + h * padded * padded, padded);
      for (size_t c = 0; c < ex.chars.size(); ++c) {
        right_[base + c * n + k] = counts_[k].Add(ex.chars[c].gold_end, p[c]);
      }
      if (predictions != nullptr) (*predictions)[k] = std::move(p);
    }
  }
  const std::vector<CharPrediction> next = PredictAlwaysNext(ex);
  const std::vector<CharPrediction> sep = PredictAlwaysSep(ex);
  for (size_t c = 0; c < ex.chars.size(); ++c) {
    const bool gold = ex.chars[c].gold_end;
    const bool a = always_next_.Add(gold, next[c]);
    const bool b = always_sep_.Add(gold, sep[c]);
    baselines_right_ += a || b;
    gold_ends_ += gold;
  }
  characters_ += static_cast<int64_t>(ex.chars.size());
  skipped_ += ex.skipped_pieces;
  ++examples_;
  return absl::OkStatus();
}

SegmentScore SegmentationAccumulator::Score(const Counts& c) const {
  SegmentScore s;
  const int64_t tn = characters_ - c.tp - c.fp - c.fn;
  const int64_t gold_internal = characters_ - gold_ends_;
  s.true_ends = c.tp;
  s.predicted_ends = c.tp + c.fp;
  s.correct = c.correct;
  s.precision = Ratio(c.tp, c.tp + c.fp);
  s.recall = Ratio(c.tp, c.tp + c.fn);
  s.f1 = Ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn);
  s.accuracy = Ratio(c.correct, characters_);
  // Matthews correlation of end / not end; the four factors in double (the
  // product of four counts overflows int64 from about 55k characters).
  const double tp = static_cast<double>(c.tp), fp = static_cast<double>(c.fp),
               fn = static_cast<double>(c.fn), tnd = static_cast<double>(tn);
  const double den = (tp + fp) * (tp + fn) * (tnd + fp) * (tnd + fn);
  s.mcc = characters_ == 0 ? kNaN
          : den == 0       ? 0.0
                           : (tp * tnd - fp * fn) / std::sqrt(den);
  // The mean of the per-gold-class accuracies over the classes present.
  double sum = 0;
  int classes = 0;
  if (gold_ends_ > 0) {
    sum += static_cast<double>(c.tp) / gold_ends_;
    ++classes;
  }
  if (gold_internal > 0) {
    sum += static_cast<double>(c.internal_right) / gold_internal;
    ++classes;
  }
  s.balanced_accuracy = classes == 0 ? kNaN : sum / classes;
  return s;
}

SegmentationScores SegmentationAccumulator::Result(int top_k) const {
  const int n = layers_ * heads_;
  SegmentationScores s;
  s.num_layers = layers_;
  s.num_heads = heads_;
  s.examples = examples_;
  s.characters = characters_;
  s.gold_ends = gold_ends_;
  s.skipped_pieces = skipped_;
  for (int k = 0; k < n; ++k) {
    const SegmentScore h = Score(counts_[k]);
    s.true_ends.push_back(h.true_ends);
    s.predicted_ends.push_back(h.predicted_ends);
    s.correct.push_back(h.correct);
    s.precision.push_back(h.precision);
    s.recall.push_back(h.recall);
    s.f1.push_back(h.f1);
    s.accuracy.push_back(h.accuracy);
    s.mcc.push_back(h.mcc);
    s.balanced_accuracy.push_back(h.balanced_accuracy);
  }
  s.always_next = Score(always_next_);
  s.always_sep = Score(always_sep_);
  s.oracle_baselines = Ratio(baselines_right_, characters_);
  s.ranking.resize(n);
  std::iota(s.ranking.begin(), s.ranking.end(), 0);
  // NaN sorts below every defined score (MCC is in [-1, 1], balanced
  // accuracy in [0, 1]).
  auto key = [](double v) { return std::isnan(v) ? -2.0 : v; };
  std::stable_sort(s.ranking.begin(), s.ranking.end(), [&](int x, int y) {
    if (key(s.mcc[x]) != key(s.mcc[y])) return key(s.mcc[x]) > key(s.mcc[y]);
    return key(s.balanced_accuracy[x]) > key(s.balanced_accuracy[y]);
  });
  s.top_k = std::clamp(top_k, 1, std::max(1, n));
  int64_t any_all = 0, any_top = 0;
  for (int64_t c = 0; c < characters_; ++c) {
    const size_t row = static_cast<size_t>(c) * n;
    bool all = false, top = false;
    for (int k = 0; k < n && !all; ++k) all = right_[row + k];
    for (int r = 0; r < s.top_k && !top; ++r) {
      top = right_[row + s.ranking[r]];
    }
    any_all += all;
    any_top += top;
  }
  s.oracle_all = Ratio(any_all, characters_);
  s.oracle_top = Ratio(any_top, characters_);
  return s;
}

}  // namespace bertology
