// The pruning curve of PruneCurve (Michel et al. 2019, HF run_bertology.py):
// accuracy against the heads left, one point per step, with the stopping
// threshold drawn as a dashed line. Pure: plain data in, standalone SVG out.
#ifndef BERTOLOGY_CLIENT_RENDER_PRUNE_CURVE_FIGURE_H_
#define BERTOLOGY_CLIENT_RENDER_PRUNE_CURVE_FIGURE_H_

#include <string>
#include <vector>

namespace bertology::render {

struct PrunePoint {
  int step = 0;
  int heads_left = 0;
  double accuracy = 0;  // in [0, 1]
};

// One <circle class="point" data-step data-heads-left data-accuracy> per
// step in the given order, joined by a <polyline class="curve">; the
// threshold (accuracy, NaN for none) as <line class="threshold">; the kept
// step's point also has class "kept". x runs from all heads (left) down to
// 0 (right).
std::string PruneCurveSvg(const std::string& subtitle, int total_heads,
                          const std::vector<PrunePoint>& steps,
                          double threshold_accuracy, int kept_step);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_PRUNE_CURVE_FIGURE_H_
