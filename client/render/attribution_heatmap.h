// Token attributions as a self-contained HTML heatmap (inline CSS, no
// script, no network): one table per input, a row per method and a column
// per unit (word piece or word), each cell coloured by score / max|score|
// of its row on the diverging blue-white-red scale (color_scale.h), the
// score itself in the cell's tooltip (special tokens out of the scale:
// AttributionPanel::special). Rows are scaled on their own because
// the methods' units differ (a gradient norm, a share of attention flow);
// a method that is never negative uses only the white-to-red half, so red
// reads "supports the output" in every row. Plain data in, a string out;
// the markup is well-formed XML, so tests parse it as the SVGs.
#ifndef BERTOLOGY_CLIENT_RENDER_ATTRIBUTION_HEATMAP_H_
#define BERTOLOGY_CLIENT_RENDER_ATTRIBUTION_HEATMAP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology::render {

struct AttributionRow {
  std::string method;      // the row's label ("integrated-gradients")
  bool is_signed = false;  // labelled "signed" (else "≥ 0") beside its name
  std::vector<double> scores;  // one per unit; NaN drawn grey, "n/a"
};

// One input: the units are the columns.
struct AttributionPanel {
  std::string title;               // e.g. the input's texts
  std::string subtitle;            // e.g. the class explained and the IG gap
  std::vector<std::string> units;  // any UTF-8; escaped when drawn
  std::vector<int> segments;       // optional, same length as units
  // Optional, same length as units: the tokens the tokenizer added. They
  // are left out of each row's scale when other units have a score: the
  // methods with an identity term (rollout, flow, attention x gradient)
  // give [CLS] most of their mass, which would wash the text's cells out;
  // their cells are clipped to the scale's ends (the tooltip keeps the
  // score).
  std::vector<bool> special;
  std::vector<AttributionRow> rows;
};

struct AttributionPage {
  std::string title, subtitle;
  std::vector<AttributionPanel> panels;
};

// The page: <table class="attribution" data-input="i"> per panel, one
// <tr class="method-row" data-method="..."> per row holding one
// <td class="cell" data-value="..." data-scaled="..." title="..."> per unit
// (data-value empty for NaN). INVALID_ARGUMENT when a row's scores or the
// segments do not match the units in number.
absl::StatusOr<std::string> AttributionHeatmapHtml(const AttributionPage& page);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_ATTRIBUTION_HEATMAP_H_
