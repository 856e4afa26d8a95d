#include "server/core/tokenizer/tokenizer_config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace bertology {
namespace {

using Strings = std::vector<std::string>;

const Strings kDefaultSpecial = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};

class TokenizerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tokenizer_config_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "tokenizer_config.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<TokenizerOptions> Read(const std::string& contents) {
    std::ofstream(path_) << contents;
    return ReadTokenizerConfig(path_);
  }
  // The error for `contents`, which must be INVALID_ARGUMENT naming the
  // file and `field`.
  void ExpectInvalid(const std::string& contents, const std::string& field) {
    SCOPED_TRACE(contents);
    absl::StatusOr<TokenizerOptions> options = Read(contents);
    ASSERT_FALSE(options.ok());
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(options.status().message());
    EXPECT_NE(message.find(path_), std::string::npos) << message;
    EXPECT_NE(message.find(field), std::string::npos) << message;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(TokenizerConfigTest, AbsentFileGivesHfDefaults) {
  absl::StatusOr<TokenizerOptions> options =
      ReadTokenizerConfig((dir_ / "missing.json").string());
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->do_lower_case);
  EXPECT_FALSE(options->strip_accents.has_value());
  EXPECT_TRUE(options->tokenize_chinese_chars);
  EXPECT_TRUE(options->never_split.empty());
  EXPECT_EQ(options->special_tokens, kDefaultSpecial);
  EXPECT_EQ(options->max_input_chars_per_word, 100);
}

TEST_F(TokenizerConfigTest, EmptyObjectGivesHfDefaults) {
  absl::StatusOr<TokenizerOptions> options = Read("{}");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->do_lower_case);
  EXPECT_FALSE(options->strip_accents.has_value());
  EXPECT_TRUE(options->tokenize_chinese_chars);
  EXPECT_EQ(options->special_tokens, kDefaultSpecial);
}

TEST_F(TokenizerConfigTest, ReadsEachSetting) {
  absl::StatusOr<TokenizerOptions> options = Read(R"({
    "do_lower_case": false, "strip_accents": true,
    "tokenize_chinese_chars": false, "never_split": ["lol", "[E1]"],
    "do_basic_tokenize": true, "model_max_length": 512,
    "tokenizer_class": "BertTokenizer"})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->do_lower_case);
  EXPECT_EQ(options->strip_accents, std::optional<bool>(true));
  EXPECT_FALSE(options->tokenize_chinese_chars);
  EXPECT_EQ(options->never_split, (Strings{"lol", "[E1]"}));

  options = Read(R"({"strip_accents": false, "never_split": null})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->do_lower_case);
  EXPECT_EQ(options->strip_accents, std::optional<bool>(false));
  EXPECT_TRUE(options->never_split.empty());

  options = Read(R"({"strip_accents": null})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->strip_accents.has_value());
}

TEST_F(TokenizerConfigTest, SpecialTokensFromNamesAndLists) {
  absl::StatusOr<TokenizerOptions> options = Read(R"({
    "cls_token": "<cls>", "mask_token": {"__type": "AddedToken",
      "content": "<mask>", "lstrip": true, "rstrip": false,
      "single_word": false, "normalized": false},
    "pad_token": null, "bos_token": "<s>",
    "additional_special_tokens": ["[E1]", {"content": "[E2]"}, "[E1]"],
    "added_tokens_decoder": {
      "0": {"content": "[PAD]", "special": true},
      "30522": {"content": "<new>", "special": false, "normalized": true}}})");
  ASSERT_TRUE(options.ok()) << options.status();
  // pad_token null drops the default, but added_tokens_decoder brings
  // "[PAD]" back (as HF, which splits on every added token).
  EXPECT_EQ(options->special_tokens,
            (Strings{"[UNK]", "[SEP]", "<cls>", "<mask>", "<s>", "[E1]", "[E2]",
                     "[PAD]", "<new>"}));
}

TEST_F(TokenizerConfigTest, MalformedJsonNamesTheFile) {
  ExpectInvalid(R"({"do_lower_case": tru})", "malformed JSON");
  ExpectInvalid("", "malformed JSON");
  ExpectInvalid("[true]", "JSON object");
  // Found by tokenizer_config_fuzz (corpus regression-number-overflow):
  // nlohmann throws out_of_range, not parse_error, for a number past a
  // double's range, and it escaped ReadTokenizerConfig (std::terminate).
  ExpectInvalid(R"({"model_max_length": 111111e111111})", "malformed JSON");
}

TEST_F(TokenizerConfigTest, WrongTypesNameTheField) {
  ExpectInvalid(R"({"do_lower_case": "yes"})", "do_lower_case");
  ExpectInvalid(R"({"do_lower_case": 1})", "do_lower_case");
  ExpectInvalid(R"({"strip_accents": "false"})", "strip_accents");
  ExpectInvalid(R"({"tokenize_chinese_chars": null})",
                "tokenize_chinese_chars");
  ExpectInvalid(R"({"never_split": "lol"})", "never_split");
  ExpectInvalid(R"({"never_split": ["lol", 3]})", "never_split[1]");
  ExpectInvalid(R"({"mask_token": 4})", "mask_token");
  ExpectInvalid(R"({"mask_token": {"lstrip": true}})", "mask_token.content");
  ExpectInvalid(R"({"mask_token": {"content": "[M]", "rstrip": 1}})",
                "mask_token.rstrip");
  ExpectInvalid(R"({"additional_special_tokens": "[E1]"})",
                "additional_special_tokens");
  ExpectInvalid(R"({"additional_special_tokens": ["[E1]", 2]})",
                "additional_special_tokens[1]");
  ExpectInvalid(R"({"added_tokens_decoder": {"5": "x"}})",
                "added_tokens_decoder.5");
  ExpectInvalid(R"({"do_basic_tokenize": "no"})", "do_basic_tokenize");
}

TEST_F(TokenizerConfigTest, UnsupportedSettingsAreRefused) {
  ExpectInvalid(R"({"do_basic_tokenize": false})", "do_basic_tokenize");
  ExpectInvalid(R"({"additional_special_tokens": [
                   {"content": "[E1]", "single_word": true}]})",
                "additional_special_tokens[0].single_word");
}

TEST_F(TokenizerConfigTest, DirectoryIsUnreadable) {
  absl::StatusOr<TokenizerOptions> options = ReadTokenizerConfig(dir_.string());
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
}

// The options ReadTokenizerConfig gives drive the tokenizer.
TEST_F(TokenizerConfigTest, ConfigReachesTheTokenizer) {
  absl::StatusOr<TokenizerOptions> options = Read(R"({
    "strip_accents": false, "never_split": ["lol"],
    "additional_special_tokens": ["[E1]"]})");
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<Vocab> vocab = Vocab::FromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[E1]", "café", "lol"}, "test");
  ASSERT_TRUE(vocab.ok());
  const BertTokenizer tokenizer(*std::move(vocab), *std::move(options));
  absl::StatusOr<std::vector<Token>> tokens = tokenizer.Tokenize("Café[E1]LOL");
  ASSERT_TRUE(tokens.ok());
  std::vector<int> ids;
  for (const Token& t : *tokens) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<int>{5, 4, 6}));
}

TEST_F(TokenizerConfigTest, RobertaDefaultsWhenAbsent) {
  auto options = ReadRobertaTokenizerConfig((dir_ / "absent.json").string());
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->add_prefix_space);
  EXPECT_EQ(options->bos_token, "<s>");
  EXPECT_EQ(options->mask_token, "<mask>");
  EXPECT_TRUE(options->mask_lstrip);
}

TEST_F(TokenizerConfigTest, RobertaReadsPrefixSpaceTokensAndMaskLstrip) {
  std::ofstream(path_) << R"({"add_prefix_space": true, "bos_token": "<b>",
      "eos_token": {"content": "<e>", "lstrip": false},
      "mask_token": {"content": "<m>", "lstrip": true},
      "added_tokens_decoder": {"9": {"content": "<m>", "lstrip": false}}})";
  auto options = ReadRobertaTokenizerConfig(path_);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->add_prefix_space);
  EXPECT_EQ(options->bos_token, "<b>");
  EXPECT_EQ(options->eos_token, "<e>");
  EXPECT_EQ(options->unk_token, "<unk>");
  EXPECT_EQ(options->mask_token, "<m>");
  // The added token's own entry, which save_pretrained writes, has the
  // last word.
  EXPECT_FALSE(options->mask_lstrip);
}

TEST_F(TokenizerConfigTest, RobertaErrorsNameTheFileAndField) {
  for (const auto& [contents, field] :
       std::vector<std::pair<std::string, std::string>>{
           {R"({"add_prefix_space": "yes"})", "add_prefix_space"},
           {R"({"mask_token": 4})", "mask_token"},
           {R"({"bos_token": {"content": "<s>", "single_word": true}})",
            "bos_token.single_word"},
           {"[1]", "JSON object"},
       }) {
    SCOPED_TRACE(contents);
    std::ofstream(path_) << contents;
    auto options = ReadRobertaTokenizerConfig(path_);
    ASSERT_FALSE(options.ok());
    const std::string message(options.status().message());
    EXPECT_NE(message.find(path_), std::string::npos) << message;
    EXPECT_NE(message.find(field), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace bertology
