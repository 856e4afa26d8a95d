#include "client/render/svg_test_util.h"

#include <expat.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bertology::render::testing {
namespace {

struct ParseState {
  std::unique_ptr<XmlNode> root;
  std::vector<XmlNode*> stack;
};

void OnStart(void* user, const XML_Char* name, const XML_Char** attrs) {
  auto* state = static_cast<ParseState*>(user);
  auto node = std::make_unique<XmlNode>();
  node->name = name;
  for (int i = 0; attrs[i] != nullptr; i += 2) {
    node->attrs[attrs[i]] = attrs[i + 1];
  }
  XmlNode* raw = node.get();
  if (state->stack.empty()) {
    state->root = std::move(node);
  } else {
    state->stack.back()->children.push_back(std::move(node));
  }
  state->stack.push_back(raw);
}

void OnEnd(void* user, const XML_Char*) {
  static_cast<ParseState*>(user)->stack.pop_back();
}

void OnText(void* user, const XML_Char* s, int len) {
  auto* state = static_cast<ParseState*>(user);
  if (!state->stack.empty()) state->stack.back()->text.append(s, len);
}

void Collect(const XmlNode& node, const std::string& name,
             const std::string& cls, std::vector<const XmlNode*>* out) {
  if (node.name == name) {
    bool match = cls.empty();
    for (absl::string_view c : absl::StrSplit(node.Attr("class"), ' ')) {
      match |= c == cls;
    }
    if (match) out->push_back(&node);
  }
  for (const auto& child : node.children) Collect(*child, name, cls, out);
}

}  // namespace

std::string XmlNode::AllText() const {
  std::string s = text;
  for (const auto& c : children) s += c->AllText();
  return s;
}

absl::StatusOr<std::unique_ptr<XmlNode>> ParseXml(const std::string& xml) {
  ParseState state;
  XML_Parser parser = XML_ParserCreate("UTF-8");
  XML_SetUserData(parser, &state);
  XML_SetElementHandler(parser, OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser, OnText);
  const bool ok = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()),
                            /*isFinal=*/1) == XML_STATUS_OK;
  std::string error;
  if (!ok) {
    error = absl::StrCat("line ", XML_GetCurrentLineNumber(parser), ": ",
                         XML_ErrorString(XML_GetErrorCode(parser)));
  }
  XML_ParserFree(parser);
  if (!ok) return absl::InvalidArgumentError(error);
  if (state.root == nullptr) return absl::InvalidArgumentError("empty");
  return std::move(state.root);
}

std::vector<const XmlNode*> FindAll(const XmlNode& root,
                                    const std::string& name,
                                    const std::string& cls) {
  std::vector<const XmlNode*> out;
  Collect(root, name, cls, &out);
  return out;
}

Rgb ParseHexColor(const std::string& hex) {
  if (hex.size() != 7 || hex[0] != '#') return {-1, -1, -1};
  const long v = std::strtol(hex.c_str() + 1, nullptr, 16);
  return {static_cast<int>((v >> 16) & 0xFF), static_cast<int>((v >> 8) & 0xFF),
          static_cast<int>(v & 0xFF)};
}

}  // namespace bertology::render::testing
