// Token- and word-level views of attention maps (their byte encodings:
// common/float_codec.h). Plain C++ on row-major float maps; no tensors, no
// gRPC.
#ifndef BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_
#define BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_

#include <vector>

#include "server/core/tokenizer/tokenizer.h"

namespace bertology {

// The rows/columns of a word-level map: consecutive tokens sharing a
// word_index form one word; every special token is a word of its own.
struct WordSpan {
  int first_token = 0;
  int num_tokens = 0;
};
std::vector<WordSpan> WordSpans(const Encoding& encoding);

// Clark et al. 2019: from a token map `a` ([T x T], row = from, column =
// to), attention *to* a word is the sum over its pieces and attention
// *from* a word is the mean over its pieces. Returns [W x W] row-major; rows
// that summed to 1 still do.
std::vector<float> WordLevelMap(const std::vector<float>& a, int t,
                                const std::vector<WordSpan>& words);

}  // namespace bertology

#endif  // BERTOLOGY_SERVICE_CONVERT_ATTENTION_VIEW_H_
