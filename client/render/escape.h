// Escaping for the text the renderers put into SVG, HTML and inline JSON.
#ifndef BERTOLOGY_CLIENT_RENDER_ESCAPE_H_
#define BERTOLOGY_CLIENT_RENDER_ESCAPE_H_

#include <string>
#include <string_view>

namespace bertology::render {

// Escapes & < > " ' for XML/HTML text and attribute values, and drops the
// control characters XML 1.0 forbids (keeps \t \n \r). Invalid UTF-8 bytes
// become U+FFFD so the document stays well-formed.
std::string XmlEscape(std::string_view text);

// Makes serialized JSON safe inside an HTML <script> element: <, >, & and
// U+2028/U+2029 become \u escapes (valid only because in JSON these can
// appear only inside strings), so no value can close the script.
std::string JsonForScript(std::string_view json);

// Formats a number for display with `decimals` digits after the point;
// NaN and infinities become "n/a".
std::string FormatNumber(double value, int decimals);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_ESCAPE_H_
