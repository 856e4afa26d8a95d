// One head's attention difference map between two models on one input
// (CompareAttention's detail; the query-title study's before/after
// fine-tuning view): a T x T diverging heatmap, row = attending token,
// column = attended token, red where model B attends more than model A,
// blue where less. Pure: plain data in, a standalone SVG out.
#ifndef BERTOLOGY_CLIENT_RENDER_DIFFERENCE_MAP_FIGURE_H_
#define BERTOLOGY_CLIENT_RENDER_DIFFERENCE_MAP_FIGURE_H_

#include <string>
#include <vector>

namespace bertology::render {

struct DifferenceMap {
  std::string title, subtitle;
  std::vector<std::string> tokens;  // the T rows/columns
  std::vector<double> values;       // [T x T] row-major, map_b - map_a
};

// One <rect class="cell"> per (row, column) with data-row, data-col and
// data-value, coloured on a blue-white-red scale symmetric about 0 (its
// ends at the largest |value|); the tokens as <text class="row-label"> and
// <text class="col-label">; a colour bar of class "legend".
std::string DifferenceMapSvg(const DifferenceMap& map);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_DIFFERENCE_MAP_FIGURE_H_
