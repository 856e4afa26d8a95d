// Attention maps as pictures: a self-contained HTML head view in the spirit
// of bertviz (inline JS/CSS, no network) and an SVG heatmap per head.
#ifndef BERTOLOGY_CLIENT_RENDER_ATTENTION_PAGE_H_
#define BERTOLOGY_CLIENT_RENDER_ATTENTION_PAGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bertology::render {

// One head's map: [size x size] row-major, row = attending (from) token,
// column = attended (to) token, size = AttentionData::tokens.size().
struct HeadMap {
  int layer = 0;
  int head = 0;
  std::vector<float> weights;
};

// One input's attention, as GetAttention returns it (tokens are the rows /
// columns of the maps: word pieces, or words at word granularity).
struct AttentionData {
  std::string title;                // page/figure title; may be empty
  std::vector<std::string> tokens;  // any UTF-8; escaped when drawn
  std::vector<int> segments;        // optional, same length as tokens
  std::vector<HeadMap> maps;        // any subset of (layer, head), any order
  std::string prediction;           // optional line under the title
};

// Checks every map has tokens.size()^2 weights, segments is empty or
// matches, and no (layer, head) appears twice.
absl::Status ValidateAttentionData(const AttentionData& data);

// The HTML page: two token columns, lines from left token i to right token j
// with opacity = weight, <select id="layer"> and <select id="head"> over the
// maps present, hovering a token shows only its lines. The data is embedded
// as JSON in a <script type="application/json"> block, escaped so no token
// can close the script. NaN weights are drawn as 0.
absl::StatusOr<std::string> AttentionPageHtml(const AttentionData& data);

// One <rect class="cell"> per (row, column) with the weight in a
// white-to-blue scale and in its <title>; token labels on both axes.
absl::StatusOr<std::string> AttentionSvg(const AttentionData& data,
                                         const HeadMap& map);

// Writes `<dir>/attention.html` and `<dir>/attention_L{l}_H{h}.svg` for
// each map (dir created if missing); appends the paths to `written`.
absl::Status WriteAttentionFiles(const AttentionData& data,
                                 const std::string& dir,
                                 std::vector<std::string>* written = nullptr);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_ATTENTION_PAGE_H_
