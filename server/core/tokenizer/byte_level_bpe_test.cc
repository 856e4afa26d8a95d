// ByteLevelBpe against HF's RobertaTokenizerFast: tests/golden/byte-bpe/
// (vocab.json, merges.txt, golden.jsonl) is written by
// tests/golden/make_byte_bpe_golden.py with HF's own tokenizers, not by
// this implementation.
#include "server/core/tokenizer/byte_level_bpe.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/tokenizer/golden_files_for_tests.h"

namespace bertology {
namespace {

using testing::ReadJsonLines;
using testing::SourcePath;

const std::string kVocab = SourcePath("tests/golden/byte-bpe/vocab.json");
const std::string kMerges = SourcePath("tests/golden/byte-bpe/merges.txt");

std::vector<nlohmann::json> GoldenCases() {
  const std::string path = SourcePath("tests/golden/byte-bpe/golden.jsonl");
  return ReadJsonLines(path);
}

std::unique_ptr<ByteLevelBpe> Load(bool add_prefix_space) {
  ByteLevelBpeOptions options;
  options.add_prefix_space = add_prefix_space;
  auto bpe = ByteLevelBpe::FromFiles(kVocab, kMerges, options);
  EXPECT_TRUE(bpe.ok()) << bpe.status();
  return bpe.ok() ? std::move(*bpe) : nullptr;
}

TEST(ByteLevelBpeTest, MatchesHfFastOnEveryGoldenCase) {
  const std::unique_ptr<ByteLevelBpe> bpe[2] = {Load(false), Load(true)};
  ASSERT_TRUE(bpe[0] && bpe[1]);
  const std::vector<nlohmann::json> cases = GoldenCases();
  ASSERT_GE(cases.size(), 80u);
  for (const nlohmann::json& c : cases) {
    const std::string a = c["text_a"];
    std::optional<std::string> b;
    if (!c["text_b"].is_null()) b = c["text_b"].get<std::string>();
    SCOPED_TRACE(c.dump());
    auto encoding = bpe[c["add_prefix_space"].get<bool>()]->Encode(
        a, b ? std::optional<std::string_view>(*b) : std::nullopt);
    ASSERT_TRUE(encoding.ok()) << encoding.status();
    std::vector<int> ids;
    std::vector<std::string> pieces;
    std::vector<std::vector<size_t>> offsets;
    for (const ByteBpeToken& t : encoding->tokens) {
      ids.push_back(t.id);
      pieces.push_back(t.piece);
      offsets.push_back({t.byte_start, t.byte_end});
    }
    EXPECT_EQ(ids, c["ids"].get<std::vector<int>>());
    EXPECT_EQ(pieces, c["tokens"].get<std::vector<std::string>>());
    EXPECT_EQ(offsets,
              c["byte_offsets"].get<std::vector<std::vector<size_t>>>());
    EXPECT_EQ(encoding->sequence_ids,
              c["sequence_ids"].get<std::vector<int>>());
  }
}

TEST(ByteLevelBpeTest, TokenizeHasNoSequenceSpecials) {
  auto bpe = Load(false);
  ASSERT_TRUE(bpe);
  auto tokens = bpe->Tokenize("two spaces");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_FALSE(tokens->empty());
  // The leading 'Ġ' (the space) is not covered: trim_offsets.
  EXPECT_EQ(tokens->back().piece, "Ġspaces");
  EXPECT_EQ(tokens->back().byte_start, 4u);
  EXPECT_EQ(tokens->back().byte_end, 10u);
  EXPECT_EQ(bpe->TokenToId("<mask>"), 4);
  EXPECT_EQ(bpe->TokenToId("not a token"), -1);
}

TEST(ByteLevelBpeTest, RejectsInvalidUtf8) {
  auto bpe = Load(false);
  ASSERT_TRUE(bpe);
  auto tokens = bpe->Tokenize("ab\xff");
  EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tokens.status().message().find("byte 2"), std::string::npos);
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/byte_bpe_" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

void ExpectError(const std::string& vocab, const std::string& merges,
                 absl::StatusCode code, const std::string& named,
                 const std::string& fault) {
  auto bpe = ByteLevelBpe::FromFiles(vocab, merges);
  ASSERT_FALSE(bpe.ok());
  EXPECT_EQ(bpe.status().code(), code) << bpe.status();
  EXPECT_NE(bpe.status().message().find(named), std::string::npos)
      << bpe.status();
  EXPECT_NE(bpe.status().message().find(fault), std::string::npos)
      << bpe.status();
}

TEST(ByteLevelBpeTest, FileErrorsNameTheFileAndFault) {
  const std::string specials =
      R"("<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4)";
  const std::string good_vocab =
      WriteTemp("good.json", "{" + specials + R"(, "a": 5, "b": 6, "ab": 7})");
  const std::string good_merges = WriteTemp("good.txt", "#version: 0.2\na b\n");
  ASSERT_TRUE(ByteLevelBpe::FromFiles(good_vocab, good_merges).ok());

  ExpectError("/nonexistent/vocab.json", good_merges,
              absl::StatusCode::kNotFound, "/nonexistent/vocab.json",
              "cannot open");
  ExpectError(good_vocab, "/nonexistent/merges.txt",
              absl::StatusCode::kNotFound, "/nonexistent/merges.txt",
              "cannot open");
  const std::string not_json = WriteTemp("bad1.json", "{\"a\": 1,");
  ExpectError(not_json, good_merges, absl::StatusCode::kInvalidArgument,
              not_json, "not JSON");
  const std::string bad_id = WriteTemp("bad2.json", R"({"a": "one"})");
  ExpectError(bad_id, good_merges, absl::StatusCode::kInvalidArgument, bad_id,
              "is not an id");
  const std::string no_specials = WriteTemp("bad3.json", R"({"a": 0})");
  ExpectError(no_specials, good_merges, absl::StatusCode::kInvalidArgument,
              no_specials, "special token \"<s>\" is missing");
  const std::string one_token = WriteTemp("bad1.txt", "#version: 0.2\na\n");
  ExpectError(good_vocab, one_token, absl::StatusCode::kInvalidArgument,
              one_token, "line 2: expected two tokens");
  const std::string unknown = WriteTemp("bad2.txt", "a c\n");
  ExpectError(good_vocab, unknown, absl::StatusCode::kInvalidArgument, unknown,
              "line 1: token \"c\" is not in");
}

TEST(ByteLevelBpeTest, ManyThreadsGetTheSameTokens) {
  auto bpe = Load(true);
  ASSERT_TRUE(bpe);
  const std::vector<nlohmann::json> cases = GoldenCases();
  std::vector<std::vector<int>> expected;
  for (const nlohmann::json& c : cases) {
    auto tokens = bpe->Tokenize(c["text_a"].get<std::string>());
    ASSERT_TRUE(tokens.ok());
    expected.emplace_back();
    for (const ByteBpeToken& t : *tokens) expected.back().push_back(t.id);
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < cases.size(); ++i) {
          auto tokens = bpe->Tokenize(cases[i]["text_a"].get<std::string>());
          std::vector<int> ids;
          if (tokens.ok()) {
            for (const ByteBpeToken& t : *tokens) ids.push_back(t.id);
          }
          if (ids != expected[i]) ++mismatches[w];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < 8; ++w) EXPECT_EQ(mismatches[w], 0) << "thread " << w;
}

}  // namespace
}  // namespace bertology
