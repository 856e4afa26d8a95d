// Small shared pieces of the SVG figures: the document frame, text, and
// "nice" axis ticks.
#ifndef BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_
#define BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_

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

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SVG_DOCUMENT_H_
