// For tests: labelled examples of random token ids, [CLS] first and [SEP]
// last, drawn from one seed (the same examples on every machine).
#ifndef BERTOLOGY_CORE_RANDOM_EXAMPLES_FOR_TESTS_H_
#define BERTOLOGY_CORE_RANDOM_EXAMPLES_FOR_TESTS_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "server/core/model/model.h"
#include "server/core/sweep/sweep.h"

namespace bertology {

// `n` examples of 3 to `max_tokens` tokens, the inner ones ids in
// [5, 5 + id_span) of `model`'s vocabulary, labels in [0, labels).
inline std::vector<SweepExample> RandomExamples(const Model& model, int n,
                                                uint64_t seed, int max_tokens,
                                                int id_span, int labels = 3) {
  std::mt19937_64 rng(seed);
  const SpecialTokens& specials = model.tokenizer().specials();
  std::vector<SweepExample> examples;
  for (int i = 0; i < n; ++i) {
    const int len = 3 + static_cast<int>(rng() % (max_tokens - 2));
    SweepExample ex;
    for (int j = 0; j < len; ++j) {
      Token t;
      t.id = j == 0         ? specials.cls_id
             : j == len - 1 ? specials.sep_id
                            : 5 + static_cast<int>(rng() % id_span);
      ex.encoding.tokens.push_back(t);
    }
    ex.label = static_cast<int>(rng() % labels);
    examples.push_back(std::move(ex));
  }
  return examples;
}

}  // namespace bertology

#endif  // BERTOLOGY_CORE_RANDOM_EXAMPLES_FOR_TESTS_H_
