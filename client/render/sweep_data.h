// Plain data for sweep results, as the renderers and reports take them.
//
// This mirrors bertology.v1.MaskResult without depending on protobuf, so the
// render library stays free of gRPC/proto (the CLI converts).
#ifndef BERTOLOGY_CLIENT_RENDER_SWEEP_DATA_H_
#define BERTOLOGY_CLIENT_RENDER_SWEEP_DATA_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace bertology::render {

// 0-based (layer, head).
struct HeadIndex {
  int layer = 0;
  int head = 0;
};

// One scored mask (or the unmasked baseline).
struct MaskOutcome {
  int mask_index = 0;   // position in the expanded list; -1: baseline
  std::string mask_id;  // e.g. "head-L3H7", "layer-8", "random-L0-12-k14-s7-r2"
  std::string spec;     // human description from the server
  std::vector<HeadIndex> ablated;  // heads with mask value != 1
  // Of those, the heads scaled by 0 < value < 1 rather than zeroed (a
  // dense mask's): such a mask masks no head, it scales them.
  std::vector<HeadIndex> scaled;
  int64_t examples = 0;
  // Units scored (examples, or a token classifier's labelled words);
  // correct, loss_sum and accuracy count these.
  int64_t scored = 0;
  int64_t correct = 0;
  double loss_sum = 0.0;
  double accuracy = 0.0;        // in [0, 1]
  double accuracy_delta = 0.0;  // accuracy - baseline accuracy
  // (accuracy / baseline - 1) * 100; NaN when the baseline accuracy is 0
  // (no ratio exists; 0 would read as "no change").
  double relative_change_percent = 0.0;
  double mean_loss_delta = 0.0;
  // 95 % intervals (common/intervals.h): Wilson's of accuracy, and the
  // paired one of accuracy_delta (NaN for the baseline or under 2
  // examples); distinguishable: the latter excludes 0.
  double accuracy_ci_low = NAN, accuracy_ci_high = NAN;
  double delta_ci_low = NAN, delta_ci_high = NAN;
  bool distinguishable = false;
  // Resample: draws per example and the standard deviation of the draws'
  // accuracies (0 otherwise).
  int draws = 1;
  double draw_accuracy_std = 0.0;
};

// A whole sweep. `results` may come in any order; the figures pick what they
// need by the structure of `ablated` (and the "random-" id prefix).
struct SweepResults {
  std::string model;  // shown in titles; may be empty
  int num_layers = 0;
  int num_heads = 0;
  MaskOutcome baseline;
  std::vector<MaskOutcome> results;
};

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SWEEP_DATA_H_
