#include "client/render/escape.h"

#include <cmath>

#include "gtest/gtest.h"

namespace bertology::render {
namespace {

TEST(XmlEscape, EscapesMarkupAndQuotes) {
  EXPECT_EQ(XmlEscape("</script><b>&\"'"),
            "&lt;/script&gt;&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(XmlEscape("##ing 中文"), "##ing 中文");
}

TEST(XmlEscape, DropsControlsAndReplacesInvalidUtf8) {
  EXPECT_EQ(XmlEscape(std::string("a\x01\tb\nc\0d", 8)), "a\tb\ncd");
  EXPECT_EQ(XmlEscape("x\xff\xc3y"), "x\xEF\xBF\xBD\xEF\xBF\xBDy");
  EXPECT_EQ(XmlEscape("\xed\xa0\x80"),  // a UTF-16 surrogate, not a character
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");  // emoji
}

TEST(JsonForScript, NothingCanCloseTheScript) {
  EXPECT_EQ(JsonForScript(R"(["</script><!--&"])"),
            R"(["\u003c/script\u003e\u003c!--\u0026"])");
  EXPECT_EQ(JsonForScript("[\"\xE2\x80\xA8\"]"), "[\"\\u2028\"]");
}

TEST(FormatNumber, FiniteAndNot) {
  EXPECT_EQ(FormatNumber(-12.345, 1), "-12.3");
  EXPECT_EQ(FormatNumber(-0.01, 1), "0.0");
  EXPECT_EQ(FormatNumber(NAN, 1), "n/a");
  EXPECT_EQ(FormatNumber(INFINITY, 2), "n/a");
}

}  // namespace
}  // namespace bertology::render
