// Activation patching's effects as a grid: rows x columns of normalized
// effects on a diverging scale centred at 0 (white: the patch changes
// nothing; red toward 1: it restores the clean behaviour; blue: it moves
// away from it). Per head: layers x heads; per head and position: one row
// per (layer, head), one column per clean token. Pure: plain data in, a
// standalone SVG out, every text escaped, NaN grey as "n/a".
#ifndef BERTOLOGY_CLIENT_RENDER_PATCH_FIGURE_H_
#define BERTOLOGY_CLIENT_RENDER_PATCH_FIGURE_H_

#include <string>
#include <vector>

namespace bertology::render {

struct PatchGrid {
  std::string title, subtitle;
  std::string row_axis, col_axis;  // "layer" / "head", "layer·head" / "token"
  std::vector<std::string> row_labels;  // one per row ("L0", "L0H3")
  std::vector<std::string> col_labels;  // one per column ("H0", tokens)
  // Row-major [rows x cols]; NaN where a site has no effect (the clean and
  // corrupted runs score the same) or was not patched.
  std::vector<double> values;
  // The colour scale runs over [-scale_max, scale_max]; 0 takes the largest
  // finite |value|, at least 1 (a full restoration is the natural unit).
  double scale_max = 0;
};

// One <rect class="cell"> per (row, column) with data-row, data-col and
// data-value (empty for NaN), a <title> naming row, column and value; the
// numbers are written in the cells when they fit. Column labels are turned
// when there are many (tokens). A colour bar of class "legend".
std::string PatchGridSvg(const PatchGrid& grid);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_PATCH_FIGURE_H_
