// Colour scales for the figures, as "#rrggbb" strings.
#ifndef BERTOLOGY_CLIENT_RENDER_COLOR_SCALE_H_
#define BERTOLOGY_CLIENT_RENDER_COLOR_SCALE_H_

#include <string>

namespace bertology::render {

// Grey for missing / NaN values.
inline constexpr char kMissingColor[] = "#d9d9d9";

// Diverging blue-white-red centred on 0: value / max_abs is clamped to
// [-1, 1]; -1 is dark blue, 0 white, +1 dark red (ColorBrewer RdBu ends).
// NaN, or max_abs <= 0 with a non-zero value, gives kMissingColor /
// white respectively.
std::string DivergingColor(double value, double max_abs);

// White to dark blue for value in [0, 1] (clamped); NaN is kMissingColor.
std::string SequentialColor(double value);

// Black or white, whichever reads better on `background` ("#rrggbb").
std::string TextColorOn(const std::string& background);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_COLOR_SCALE_H_
