#include "server/service/attention_passes.h"

#include <algorithm>

namespace bertology {

int AttentionPassEnd(const std::vector<Encoding>& encodings, int begin,
                     int max_rows, int64_t maps_per_row) {
  int end = begin + 1;
  int64_t longest = static_cast<int64_t>(encodings[begin].tokens.size());
  while (end < static_cast<int>(encodings.size()) && end - begin < max_rows) {
    const int64_t t =
        std::max(longest, static_cast<int64_t>(encodings[end].tokens.size()));
    const int64_t bytes = (end - begin + 1) * t * t * maps_per_row *
                          static_cast<int64_t>(sizeof(float));
    if (bytes > kMaxMapBytesPerPass) break;
    longest = t;
    ++end;
  }
  return end;
}

}  // namespace bertology
