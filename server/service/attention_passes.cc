#include "server/service/attention_passes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/core/status_macros.h"

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

absl::Status RunAttentionPasses(
    const Model& model, const std::vector<Encoding>& encodings,
    const HeadMask& mask, int max_rows, const std::string& rpc,
    const std::function<bool()>& is_cancelled, const AttentionRowFn& on_row,
    const std::function<bool(int done, int total)>& on_progress) {
  constexpr absl::Duration kProgressInterval = absl::Milliseconds(100);
  const BertConfig& c = model.config();
  const int layers = c.num_hidden_layers;
  ForwardOptions options;
  for (int l = 0; l < layers; ++l) options.attention_layers.push_back(l);
  options.compute_logits = false;
  const int total = static_cast<int>(encodings.size());
  const int batch = std::max(1, max_rows);
  absl::Time last_progress = absl::InfinitePast();
  for (int begin = 0, end = 0; begin < total; begin = end) {
    if (is_cancelled && is_cancelled()) {
      return absl::CancelledError(absl::StrCat(rpc, " cancelled after ", begin,
                                               " of ", total, " examples"));
    }
    end =
        AttentionPassEnd(encodings, begin, batch,
                         static_cast<int64_t>(layers) * c.num_attention_heads);
    std::vector<ModelRow> rows;
    for (int i = begin; i < end; ++i) rows.push_back({&encodings[i], &mask});
    ASSIGN_OR_RETURN(ForwardOutput output, model.Forward(rows, options));
    for (int r = 0; r < end - begin; ++r) {
      std::vector<const float*> maps(layers);
      int64_t padded = 0;
      for (int l = 0; l < layers; ++l) {
        auto it = output.attentions.find(l);
        if (it == output.attentions.end() || it->second.shape.size() != 4) {
          return absl::InternalError(absl::StrCat(
              "the model returned no [B, H, T, T] attention for layer ", l));
        }
        const std::vector<int64_t>& shape = it->second.shape;
        padded = shape[3];
        maps[l] = it->second.data.data() + r * shape[1] * padded * padded;
      }
      RETURN_IF_ERROR(on_row(begin + r, maps, padded));
    }
    const absl::Time now = absl::Now();
    if (end < total && now - last_progress < kProgressInterval) continue;
    last_progress = now;
    if (!on_progress(end, total)) {
      return absl::CancelledError("the client went away");
    }
  }
  return absl::OkStatus();
}

}  // namespace bertology
