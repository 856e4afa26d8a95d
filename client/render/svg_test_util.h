// Test helper: parses an XML document (the SVGs) with expat into a small
// tree, failing on anything that is not well-formed.
#ifndef BERTOLOGY_CLIENT_RENDER_SVG_TEST_UTIL_H_
#define BERTOLOGY_CLIENT_RENDER_SVG_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology::render::testing {

struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside, concatenated
  std::vector<std::unique_ptr<XmlNode>> children;

  std::string Attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? "" : it->second;
  }
  // All text below this node, in document order.
  std::string AllText() const;
};

// Parses `xml`; errors name the line and expat's message.
absl::StatusOr<std::unique_ptr<XmlNode>> ParseXml(const std::string& xml);

// Every element below `root` (itself included) named `name` whose "class"
// attribute contains `cls` as a word (empty `cls`: any).
std::vector<const XmlNode*> FindAll(const XmlNode& root,
                                    const std::string& name,
                                    const std::string& cls = "");

// (r, g, b) of "#rrggbb".
struct Rgb {
  int r = 0, g = 0, b = 0;
};
Rgb ParseHexColor(const std::string& hex);

}  // namespace bertology::render::testing

#endif  // BERTOLOGY_CLIENT_RENDER_SVG_TEST_UTIL_H_
