// Layers x heads figures of per-head values: a heatmap of one statistic
// (AnalyzeHeads' attention to [CLS], entropy, ...) and the grid of pattern
// classes with its legend. Pure: plain data in, a standalone SVG out, every
// text escaped, NaN drawn grey as "n/a".
#ifndef BERTOLOGY_CLIENT_RENDER_HEAD_GRID_FIGURES_H_
#define BERTOLOGY_CLIENT_RENDER_HEAD_GRID_FIGURES_H_

#include <string>
#include <vector>

namespace bertology::render {

struct HeadGrid {
  std::string title, subtitle;
  int num_layers = 0, num_heads = 0;
  std::vector<double> values;  // row-major [layers x heads]
  // The colour scale runs white (0) to dark blue (scale_max); 0 takes the
  // largest finite value (so entropy and distances fit too).
  double scale_max = 0;
  int decimals = 2;  // digits in the cells
};

// One <rect class="cell"> per (layer, head) with data-layer, data-head and
// data-value (empty for NaN); rows are layers (0 at the top), columns heads;
// a colour bar of class "legend" on the right.
std::string HeadGridSvg(const HeadGrid& grid);

// The pattern names, in legend order: "vertical", "diagonal",
// "vertical+diagonal", "block", "heterogeneous".
const std::vector<std::string>& PatternNames();

// One <rect class="cell pattern"> per head, coloured and lettered by its
// class (data-pattern holds the name; an unknown name is grey "?"), and a
// legend with one <rect class="legend-swatch"> per class.
std::string PatternGridSvg(const std::string& subtitle, int num_layers,
                           int num_heads,
                           const std::vector<std::string>& patterns);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_HEAD_GRID_FIGURES_H_
