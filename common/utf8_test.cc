#include "common/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(Utf8Test, DecodesWithByteOffsets) {
  // 'a' (1 byte), U+00E9 (2), U+4E2D (3), U+1F600 (4).
  const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  DecodedText d;
  ASSERT_TRUE(DecodeUtf8(text, &d).ok());
  EXPECT_EQ(d.chars, (std::vector<char32_t>{0x61, 0xE9, 0x4E2D, 0x1F600}));
  EXPECT_EQ(d.byte_offsets, (std::vector<int>{0, 1, 3, 6, 10}));
}

TEST(Utf8Test, RoundTrips) {
  const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  DecodedText d;
  ASSERT_TRUE(DecodeUtf8(text, &d).ok());
  std::string back;
  for (char32_t cp : d.chars) AppendUtf8(cp, &back);
  EXPECT_EQ(back, text);
}

TEST(Utf8Test, RejectsMalformedInput) {
  const std::vector<std::string> bad = {
      "\xFF",              // invalid lead byte
      "\x80",              // stray continuation
      "ab\xC3",            // truncated
      "\xC3\x28",          // bad continuation
      "\xC0\xAF",          // overlong '/'
      "\xE0\x80\xAF",      // overlong 3-byte
      "\xED\xA0\x80",      // surrogate U+D800
      "\xF4\x90\x80\x80",  // above U+10FFFF
  };
  for (const std::string& s : bad) {
    DecodedText d;
    absl::Status status = DecodeUtf8(s, &d);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << "accepted bytes of length " << s.size();
    EXPECT_NE(status.message().find("byte"), std::string::npos);
  }
}

TEST(Utf8Test, EmptyText) {
  DecodedText d;
  ASSERT_TRUE(DecodeUtf8("", &d).ok());
  EXPECT_TRUE(d.chars.empty());
  EXPECT_EQ(d.byte_offsets, std::vector<int>{0});
}

}  // namespace
}  // namespace bertology
