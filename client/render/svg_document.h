// Small shared pieces of the SVG figures: the document frame, text, "nice"
// axis ticks and the vertical colour bar every heatmap's legend is.
#ifndef BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_
#define BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bertology::render {

// Appends the XML declaration and the <svg> root (with viewBox, a white
// background rect of class "background", and a default font).
void OpenSvg(std::string* out, double width, double height);
// Closes what OpenSvg opened.
void CloseSvg(std::string* out);

// Appends <text> at (x, y); `text` is escaped. `anchor` is start, middle or
// end; `extra` is appended verbatim inside the tag (e.g. a transform).
void SvgText(std::string* out, double x, double y, std::string_view text,
             double font_size, std::string_view anchor = "middle",
             std::string_view extra = "");

// Round tick values covering [lo, hi] (about `target` of them), step 1, 2 or
// 5 times a power of ten. lo > hi is swapped; lo == hi is widened.
std::vector<double> NiceTicks(double lo, double hi, int target = 5);

// A heatmap's legend: a vertical bar at (x, y), w x h, filled with a
// linear gradient `id` (top to bottom) of 11 stops, stop i (0..10, at
// offset i / 10) coloured `color(i)`, and `ticks` written at its right,
// evenly spaced over `tick_span` from the top (the first at the top).
struct ColorBar {
  std::string id;
  double x = 0, y = 0, w = 0, h = 0;
  std::function<std::string(int stop)> color;
  std::vector<std::string> ticks;
  double tick_span = 0;
};
void AppendColorBar(std::string* out, const ColorBar& bar);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_
