#include "client/cli/attention_output.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/float_codec.h"

namespace bertology {
namespace client {
namespace {

bool IsFloat16(v1::AttentionEncoding e) {
  return e == v1::ATTENTION_ENCODING_FLOAT16;
}

}  // namespace

absl::StatusOr<std::vector<float>> DecodeAttentionMap(
    const std::string& bytes, int size, v1::AttentionEncoding encoding) {
  const int width = IsFloat16(encoding) ? 2 : 4;
  const size_t n = static_cast<size_t>(size) * static_cast<size_t>(size);
  if (size < 0 || bytes.size() != n * width) {
    return absl::DataLossError(absl::StrCat("an attention map has ",
                                            bytes.size(), " bytes, not ", size,
                                            "x", size, "x", width));
  }
  return width == 2 ? DecodeFloat16(bytes) : DecodeFloat32(bytes);
}

absl::StatusOr<nlohmann::json> AttentionJson(
    const v1::GetAttentionResponse& response) {
  using nlohmann::json;
  json tokens = json::array(), units = json::array(), maps = json::array();
  for (const v1::Token& t : response.tokens()) {
    tokens.push_back({{"text", t.text()},
                      {"segment", t.segment()},
                      {"word", t.word_index()},
                      {"special", t.special()}});
  }
  for (const v1::AttentionUnit& u : response.units()) {
    units.push_back({{"text", u.text()},
                     {"segment", u.segment()},
                     {"first_token", u.first_token()},
                     {"num_tokens", u.num_tokens()},
                     {"special", u.special()}});
  }
  const int n = response.size();
  for (const v1::AttentionMap& m : response.maps()) {
    absl::StatusOr<std::vector<float>> w =
        DecodeAttentionMap(m.data(), n, response.encoding());
    if (!w.ok()) return w.status();
    json rows = json::array();
    for (int r = 0; r < n; ++r) {
      rows.push_back(
          std::vector<float>(w->begin() + r * n, w->begin() + (r + 1) * n));
    }
    maps.push_back(
        {{"layer", m.layer()}, {"head", m.head()}, {"attention", rows}});
  }
  json out{{"model", response.model()},
           {"granularity",
            response.granularity() == v1::GRANULARITY_WORD ? "word" : "token"},
           {"tokens", tokens},
           {"units", units},
           {"size", n},
           {"truncated", response.truncated()},
           {"maps", maps}};
  if (response.has_prediction()) {
    const v1::Prediction& p = response.prediction();
    out["prediction"] = {
        {"label", p.label()},
        {"label_name", p.label_name()},
        {"probabilities", std::vector<float>(p.probabilities().begin(),
                                             p.probabilities().end())}};
  }
  return out;
}

absl::StatusOr<render::AttentionData> ToAttentionData(
    const v1::GetAttentionResponse& response, const v1::TextInput& input) {
  render::AttentionData data;
  data.title = absl::StrCat(response.model(), ": ", input.text_a());
  if (!input.text_b().empty())
    absl::StrAppend(&data.title, " | ", input.text_b());
  for (const v1::AttentionUnit& u : response.units()) {
    data.tokens.push_back(u.text());
    data.segments.push_back(u.segment());
  }
  const int n = static_cast<int>(data.tokens.size());
  for (const v1::AttentionMap& m : response.maps()) {
    absl::StatusOr<std::vector<float>> w =
        DecodeAttentionMap(m.data(), n, response.encoding());
    if (!w.ok()) return w.status();
    data.maps.push_back({m.layer(), m.head(), *std::move(w)});
  }
  if (response.has_prediction()) {
    const v1::Prediction& p = response.prediction();
    const float prob = p.label() >= 0 && p.label() < p.probabilities_size()
                           ? p.probabilities(p.label())
                           : std::numeric_limits<float>::quiet_NaN();
    data.prediction = absl::StrFormat(
        "prediction: %s (class %d, p = %.3f)%s", p.label_name(), p.label(),
        prob, response.truncated() ? ", input truncated" : "");
  }
  return data;
}

}  // namespace client
}  // namespace bertology
