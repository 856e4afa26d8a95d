#include "server/core/tokenizer/wordpiece.h"

#include <string>
#include <vector>

#include "common/utf8.h"
#include "gtest/gtest.h"

namespace bertology {
namespace {

BasicWord Word(const std::string& s) {
  DecodedText d;
  EXPECT_TRUE(DecodeUtf8(s, &d).ok());
  BasicWord word;
  for (int i = 0; i < static_cast<int>(d.chars.size()); ++i) {
    word.push_back({d.chars[i], i, i + 1});
  }
  return word;
}

class WordpieceTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Vocab> vocab = Vocab::FromTokens(
        {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "a",
         "##b", "##c", "ab", "abc", "##bc", "é", "##é"},
        "test");
    ASSERT_TRUE(vocab.ok()) << vocab.status();
    vocab_ = *std::move(vocab);
  }

  std::vector<std::string> Pieces(const std::string& s, int max_chars = 100) {
    std::vector<WordPiece> pieces;
    WordpieceTokenizer(&vocab_, max_chars).Split(Word(s), &pieces);
    std::vector<std::string> out;
    int expected_start = 0;
    for (const WordPiece& p : pieces) {
      EXPECT_EQ(vocab_.Id(p.text), p.id);
      if (p.id != vocab_.unk_id()) {
        EXPECT_EQ(p.start, expected_start) << "pieces must tile the word";
      }
      expected_start = p.end;
      out.push_back(p.text);
    }
    return out;
  }

  Vocab vocab_;
};

using Texts = std::vector<std::string>;

TEST_F(WordpieceTest, GreedyLongestMatchFirst) {
  // The example of tokenization.py's docstring.
  EXPECT_EQ(Pieces("unaffable"), (Texts{"un", "##aff", "##able"}));
  // "abc" is in the vocab whole, so it wins over "ab" + "##c".
  EXPECT_EQ(Pieces("abc"), (Texts{"abc"}));
  // Longest first: "ab" then "##bc" is not tried since "ab" consumed b.
  EXPECT_EQ(Pieces("abbc"), (Texts{"ab", "##bc"}));
  EXPECT_EQ(Pieces("éé"), (Texts{"é", "##é"}));
}

TEST_F(WordpieceTest, UnmatchableWordIsOneUnk) {
  EXPECT_EQ(Pieces("unx"), (Texts{"[UNK]"}));  // "un" matches, "##x" not
  EXPECT_EQ(Pieces("zzz"), (Texts{"[UNK]"}));
  std::vector<WordPiece> pieces;
  WordpieceTokenizer(&vocab_, 100).Split(Word("unx"), &pieces);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].start, 0);
  EXPECT_EQ(pieces[0].end, 3);
}

TEST_F(WordpieceTest, OverlongWordIsUnk) {
  EXPECT_EQ(Pieces("abc", /*max_chars=*/3), (Texts{"abc"}));
  EXPECT_EQ(Pieces("abcb", /*max_chars=*/3), (Texts{"[UNK]"}));
  // Length counts code points, not bytes.
  EXPECT_EQ(Pieces("ééé", /*max_chars=*/3), (Texts{"é", "##é", "##é"}));
}

}  // namespace
}  // namespace bertology
