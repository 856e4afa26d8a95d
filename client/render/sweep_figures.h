// SVG figures of a sweep, like the ones in the query-title study:
//   (a) a layers x heads heatmap of the relative change (%) in accuracy when
//       each single head is masked (diverging blue-white-red centred on 0,
//       values in the cells);
//   (b) a bar chart of the change per whole masked layer;
//   (c) accuracy against the fraction of masked heads for random masks over
//       the low vs the high half of the layers (mean, with min-max range over
//       repeats).
//
// All functions are pure: plain data in, a standalone SVG document (UTF-8,
// every text XML-escaped, NaN/inf drawn as "n/a") out. A figure with no
// matching results still renders (empty cells / an "no data" note), so a
// caller can always write it.
#ifndef BERTOLOGY_CLIENT_RENDER_SWEEP_FIGURES_H_
#define BERTOLOGY_CLIENT_RENDER_SWEEP_FIGURES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/render/sweep_data.h"

namespace bertology::render {

// (a) One <rect class="cell"> per (layer, head): exactly num_layers *
// num_heads cells, rows = layers (0 at the top), columns = heads. A cell's
// value is the relative change of the mask whose `ablated` is exactly that
// one head; cells without such a mask are grey and say "n/a".
std::string HeadHeatmapSvg(const SweepResults& sweep);

// (b) One <rect class="bar"> per layer whose masks ablate exactly all heads
// of that layer (missing layers get no bar but keep their axis slot).
std::string LayerBarsSvg(const SweepResults& sweep);

// (c) Masks with id prefix "random-", one series per layer range named in
// the id (the server's "random-L0-6-k7-s1-r3" is "layers 0-5"; no "-L" part
// is "all layers"), see RandomSeries in mask_groups.h. x = ablated heads /
// heads in the range, y = accuracy; repeats at equal x are drawn as their
// mean with a min-max bar. Each series starts at the baseline (x = 0).
std::string FractionCurveSvg(const SweepResults& sweep);

// Options for WriteSweepFigures.
struct SweepFigureFiles {
  std::string heads_heatmap = "heads_heatmap.svg";
  std::string layer_bars = "layer_bars.svg";
  std::string fraction_curve = "fraction_curve.svg";
};

// Writes the three figures into `dir` (created if missing) and, when
// `written` is non-null, appends the paths written. Figures whose data is
// absent from the sweep (e.g. no single-head masks) are skipped.
absl::Status WriteSweepFigures(const SweepResults& sweep,
                               const std::string& dir,
                               std::vector<std::string>* written = nullptr,
                               const SweepFigureFiles& names = {});

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SWEEP_FIGURES_H_
