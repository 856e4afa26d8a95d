#include "server/core/tokenizer/vocab.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace {

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(VocabTest, LineNumberIsId) {
  const std::string path =
      WriteFile("vocab_ok.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##lo\n");
  absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  EXPECT_EQ(vocab->size(), 6);
  EXPECT_EQ(vocab->pad_id(), 0);
  EXPECT_EQ(vocab->unk_id(), 1);
  EXPECT_EQ(vocab->cls_id(), 2);
  EXPECT_EQ(vocab->sep_id(), 3);
  EXPECT_EQ(vocab->Id("hello"), 4);
  EXPECT_EQ(vocab->Id("##lo"), 5);
  EXPECT_EQ(vocab->Token(5), "##lo");
  EXPECT_EQ(vocab->Id("absent"), -1);
  EXPECT_FALSE(vocab->Contains("lo"));
}

TEST(VocabTest, CrlfLinesLoseTheCarriageReturn) {
  const std::string path =
      WriteFile("vocab_crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nx\r\n");
  absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
  ASSERT_TRUE(vocab.ok()) << vocab.status();
  EXPECT_EQ(vocab->Id("x"), 4);
}

TEST(VocabTest, MissingFileNamesThePath) {
  const std::string path = testing::TempDir() + "/no/such/vocab.txt";
  absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
  EXPECT_EQ(vocab.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(vocab.status().message().find(path), std::string::npos)
      << vocab.status();
}

TEST(VocabTest, MissingClsNamesFileAndToken) {
  const std::string path =
      WriteFile("vocab_no_cls.txt", "[PAD]\n[UNK]\n[SEP]\nhello\n");
  absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
  EXPECT_EQ(vocab.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(vocab.status().message().find(path), std::string::npos);
  EXPECT_NE(vocab.status().message().find("[CLS]"), std::string::npos)
      << vocab.status();
}

TEST(VocabTest, EachSpecialTokenIsRequired) {
  for (const std::string missing : {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) {
    std::vector<std::string> tokens;
    for (const std::string t : {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) {
      if (t != missing) tokens.push_back(t);
    }
    absl::StatusOr<Vocab> vocab = Vocab::FromTokens(tokens, "mem");
    EXPECT_FALSE(vocab.ok()) << missing;
    EXPECT_NE(vocab.status().message().find(missing), std::string::npos)
        << vocab.status();
  }
}

TEST(VocabTest, EmptyFileIsAnError) {
  const std::string path = WriteFile("vocab_empty.txt", "");
  absl::StatusOr<Vocab> vocab = Vocab::FromFile(path);
  EXPECT_EQ(vocab.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(vocab.status().message().find(path), std::string::npos);
  EXPECT_NE(vocab.status().message().find("empty"), std::string::npos)
      << vocab.status();
}

TEST(VocabTest, InvalidUtf8NamesTheLine) {
  absl::StatusOr<Vocab> vocab = Vocab::FromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "ok", "bad\xff"}, "mem.txt");
  EXPECT_EQ(vocab.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(vocab.status().message().find("line 6"), std::string::npos)
      << vocab.status();
}

TEST(VocabTest, DuplicateTokenMapsToLastLine) {
  absl::StatusOr<Vocab> vocab = Vocab::FromTokens(
      {"[PAD]", "dup", "[UNK]", "[CLS]", "[SEP]", "dup"}, "mem");
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->Id("dup"), 5);
  EXPECT_EQ(vocab->size(), 6);
}

}  // namespace
}  // namespace bertology
