// Sorting sweep results into the groups the figures draw: single heads,
// whole layers, and series of random masks.
#ifndef BERTOLOGY_CLIENT_RENDER_MASK_GROUPS_H_
#define BERTOLOGY_CLIENT_RENDER_MASK_GROUPS_H_

#include <string>
#include <vector>

#include "client/render/sweep_data.h"

namespace bertology::render {

// True when `r` zeroes exactly one head, inside [0, layers) x [0, heads),
// and changes no other; sets *head. A head scaled by 0.5 is not "a single
// head masked".
bool IsSingleHead(const MaskOutcome& r, int layers, int heads, HeadIndex* head);

// True when `r` zeroes exactly the `heads` distinct heads of one layer in
// range and scales none; sets *layer.
bool IsWholeLayer(const MaskOutcome& r, int layers, int heads, int* layer);

// The heads `r` zeroes: `ablated` without the scaled ones.
int NumZeroed(const MaskOutcome& r);

// One x position of a random-mask series: all repeats that ablate the same
// number of heads.
struct FractionPoint {
  int num_ablated = 0;
  double fraction = 0;  // num_ablated / heads in the series' layer range
  double mean_accuracy = 0;
  double min_accuracy = 0;
  double max_accuracy = 0;
  int repeats = 0;
};

// Random masks over one layer range [layer_begin, layer_end).
struct FractionSeries {
  std::string label;  // "layers 0-5", "all layers"
  int layer_begin = 0;
  int layer_end = 0;
  std::vector<FractionPoint> points;  // by increasing fraction
};

// Groups masks whose id starts with "random-" by the layer range in their id
// (the server's "random-L0-6-k7-s1-r3"; no "-L" part means all layers), and
// within a range by the number of ablated heads. Series are ordered by
// layer_begin, then layer_end. NaN accuracies are skipped.
std::vector<FractionSeries> RandomSeries(const SweepResults& sweep);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_MASK_GROUPS_H_
