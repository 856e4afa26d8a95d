#include "server/service/handlers/attention_passes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

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

absl::Status RunAttentionPasses(const std::vector<AttentionPassModel>& models,
                                const HeadMask& mask,
                                const AttentionPassCall& call,
                                const AttentionRowFn& on_row) {
  if (models.empty()) return absl::InternalError("no model to run");
  const BertConfig& c = models[0].model->config();
  const int layers = c.num_hidden_layers;
  ForwardOptions options;
  for (int l = 0; l < layers; ++l) options.attention_layers.push_back(l);
  options.compute_logits = false;
  const std::vector<Encoding>& first = *models[0].encodings;
  const int total = static_cast<int>(first.size());
  const int batch = std::max(1, call.max_rows);
  const int64_t maps_per_row =
      static_cast<int64_t>(models.size()) * layers * c.num_attention_heads;
  for (int begin = 0, end = 0; begin < total; begin = end) {
    if (call.is_cancelled && call.is_cancelled()) {
      return absl::CancelledError(absl::StrCat(call.rpc, " cancelled after ",
                                               begin, " of ", total, " ",
                                               call.units));
    }
    end = AttentionPassEnd(first, begin, batch, maps_per_row);
    std::vector<ForwardOutput> outputs;
    for (const AttentionPassModel& m : models) {
      std::vector<ModelRow> rows;
      for (int i = begin; i < end; ++i) {
        rows.push_back({&(*m.encodings)[i], &mask});
      }
      ASSIGN_OR_RETURN(ForwardOutput output, m.model->Forward(rows, options));
      for (int l = 0; l < layers; ++l) {
        auto it = output.attentions.find(l);
        if (it == output.attentions.end() || it->second.shape.size() != 4) {
          return absl::InternalError(absl::StrCat(
              "a model returned no [B, H, T, T] attention for layer ", l));
        }
      }
      outputs.push_back(std::move(output));
    }
    // Every layer of a model's pass is padded to the pass's longest row.
    AttentionPassRow row;
    row.maps.assign(models.size(), std::vector<const float*>(layers));
    for (const ForwardOutput& output : outputs) {
      row.padded.push_back(output.attentions.at(0).shape[3]);
    }
    for (int r = 0; r < end - begin; ++r) {
      row.input = begin + r;
      for (size_t m = 0; m < models.size(); ++m) {
        const int64_t p = row.padded[m];
        for (int l = 0; l < layers; ++l) {
          const FloatArray& maps = outputs[m].attentions.at(l);
          row.maps[m][l] = maps.data.data() + r * maps.shape[1] * p * p;
        }
      }
      RETURN_IF_ERROR(on_row(row));
    }
    if (call.on_progress && !call.on_progress(end, total)) {
      return absl::CancelledError("the client went away");
    }
  }
  return absl::OkStatus();
}

}  // namespace bertology
