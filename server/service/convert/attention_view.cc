#include "server/service/convert/attention_view.h"

#include <string>
#include <vector>

namespace bertology {

std::vector<WordSpan> WordSpans(const Encoding& encoding) {
  std::vector<WordSpan> words;
  int previous_word = -2;
  for (int i = 0; i < static_cast<int>(encoding.tokens.size()); ++i) {
    const Token& token = encoding.tokens[i];
    const bool joins = !token.special && token.word_index >= 0 &&
                       token.word_index == previous_word;
    if (joins) {
      ++words.back().num_tokens;
    } else {
      words.push_back(WordSpan{i, 1});
    }
    previous_word = token.special ? -2 : token.word_index;
  }
  return words;
}

std::vector<float> WordLevelMap(const std::vector<float>& a, int t,
                                const std::vector<WordSpan>& words) {
  const int w = static_cast<int>(words.size());
  // To-word sums: [T x W].
  std::vector<double> to(static_cast<size_t>(t) * w, 0.0);
  for (int i = 0; i < t; ++i) {
    for (int v = 0; v < w; ++v) {
      double sum = 0;
      for (int k = 0; k < words[v].num_tokens; ++k) {
        sum += a[static_cast<size_t>(i) * t + words[v].first_token + k];
      }
      to[static_cast<size_t>(i) * w + v] = sum;
    }
  }
  // From-word means: [W x W].
  std::vector<float> out(static_cast<size_t>(w) * w, 0.0f);
  for (int u = 0; u < w; ++u) {
    for (int v = 0; v < w; ++v) {
      double sum = 0;
      for (int k = 0; k < words[u].num_tokens; ++k) {
        sum += to[static_cast<size_t>(words[u].first_token + k) * w + v];
      }
      out[static_cast<size_t>(u) * w + v] =
          static_cast<float>(sum / words[u].num_tokens);
    }
  }
  return out;
}

}  // namespace bertology
