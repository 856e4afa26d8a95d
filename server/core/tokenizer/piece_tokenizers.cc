// RobertaTokenizer and XlmrTokenizer: the piece models' tokens as Tokens.
#include "server/core/tokenizer/piece_tokenizers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace {

// Character index of byte offset `byte` of a decoded text (offsets on a
// character boundary, or the end).
int CharAt(const DecodedText& decoded, int byte) {
  return static_cast<int>(std::lower_bound(decoded.byte_offsets.begin(),
                                           decoded.byte_offsets.end(), byte) -
                          decoded.byte_offsets.begin());
}

// Byte offsets of every character, and the text's length at the end.
absl::StatusOr<DecodedText> Decode(std::string_view text) {
  DecodedText decoded;
  absl::Status status = DecodeUtf8(text, &decoded);
  if (!status.ok()) return status;
  if (decoded.byte_offsets.size() == decoded.chars.size()) {
    decoded.byte_offsets.push_back(static_cast<int>(text.size()));
  }
  return decoded;
}

using Json = nlohmann::json;

absl::Status WrongType(const std::string& path, const std::string& field,
                       const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": field ", field, " must be ", want));
}

}  // namespace

absl::StatusOr<ByteLevelBpeOptions> ReadRobertaTokenizerConfig(
    const std::string& path) {
  ByteLevelBpeOptions options;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return options;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InvalidArgumentError(path + ": cannot read");
  const Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(path + ": not a JSON object");
  }
  if (auto it = j.find("add_prefix_space"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return WrongType(path, "add_prefix_space", "true or false");
    }
    options.add_prefix_space = it->get<bool>();
  }
  bool mask_lstrip = true;
  auto token = [&](const char* field, std::string* out) -> absl::Status {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) return absl::OkStatus();
    if (it->is_string()) {
      *out = it->get<std::string>();
    } else if (it->is_object() && it->contains("content") &&
               (*it)["content"].is_string()) {
      *out = (*it)["content"].get<std::string>();
      if (std::string(field) == "mask_token" && it->contains("lstrip") &&
          (*it)["lstrip"].is_boolean()) {
        mask_lstrip = (*it)["lstrip"].get<bool>();
      }
    } else {
      return WrongType(path, field, "a string or an AddedToken object");
    }
    return absl::OkStatus();
  };
  for (const auto& [field, out] : {
           std::pair<const char*, std::string*>{"bos_token",
                                                &options.bos_token},
           {"eos_token", &options.eos_token},
           {"unk_token", &options.unk_token},
           {"pad_token", &options.pad_token},
           {"mask_token", &options.mask_token},
       }) {
    absl::Status status = token(field, out);
    if (!status.ok()) return status;
  }
  // save_pretrained writes each special's AddedToken here.
  if (auto it = j.find("added_tokens_decoder");
      it != j.end() && it->is_object()) {
    for (const auto& [id, added] : it->items()) {
      if (added.is_object() &&
          added.value("content", "") == options.mask_token &&
          added.contains("lstrip") && added["lstrip"].is_boolean()) {
        mask_lstrip = added["lstrip"].get<bool>();
      }
    }
  }
  options.special_tokens = {options.bos_token, options.eos_token,
                            options.unk_token, options.pad_token,
                            options.mask_token};
  options.lstrip_special_tokens.clear();
  if (mask_lstrip) options.lstrip_special_tokens.push_back(options.mask_token);
  return options;
}

RobertaTokenizer::RobertaTokenizer(std::unique_ptr<ByteLevelBpe> bpe,
                                   SpecialTokens specials)
    : Tokenizer(std::move(specials)), bpe_(std::move(bpe)) {}

absl::StatusOr<std::unique_ptr<RobertaTokenizer>> RobertaTokenizer::FromFiles(
    const std::string& vocab_json, const std::string& merges_txt,
    const ByteLevelBpeOptions& options) {
  absl::StatusOr<std::unique_ptr<ByteLevelBpe>> bpe =
      ByteLevelBpe::FromFiles(vocab_json, merges_txt, options);
  if (!bpe.ok()) return bpe.status();
  SpecialTokens s;
  s.pair_separators = 2;
  const std::pair<const std::string*, std::pair<int*, std::string*>> wanted[] =
      {{&options.bos_token, {&s.cls_id, &s.cls}},
       {&options.eos_token, {&s.sep_id, &s.sep}},
       {&options.pad_token, {&s.pad_id, &s.pad}},
       {&options.unk_token, {&s.unk_id, &s.unk}},
       {&options.mask_token, {&s.mask_id, &s.mask}}};
  for (const auto& [text, out] : wanted) {
    *out.first = (*bpe)->TokenToId(*text);
    if (*out.first < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          vocab_json, ": has no \"", *text, "\" (a special token RoBERTa's ",
          "input needs; tokenizer_config.json names it)"));
    }
    *out.second = *text;
  }
  return std::unique_ptr<RobertaTokenizer>(
      new RobertaTokenizer(*std::move(bpe), std::move(s)));
}

absl::StatusOr<std::vector<Token>> RobertaTokenizer::Tokenize(
    std::string_view text) const {
  absl::StatusOr<DecodedText> decoded = Decode(text);
  if (!decoded.ok()) return decoded.status();
  absl::StatusOr<std::vector<ByteBpeToken>> pieces = bpe_->Tokenize(text);
  if (!pieces.ok()) return pieces.status();
  std::vector<Token> out;
  out.reserve(pieces->size());
  for (ByteBpeToken& p : *pieces) {
    Token t;
    t.text = std::move(p.piece);
    t.id = p.id;
    t.byte_start = static_cast<int>(p.byte_start);
    t.byte_end = static_cast<int>(p.byte_end);
    t.char_start = CharAt(*decoded, t.byte_start);
    t.char_end = CharAt(*decoded, t.byte_end);
    t.word_index = p.word;
    out.push_back(std::move(t));
  }
  return out;
}

XlmrTokenizer::XlmrTokenizer(std::unique_ptr<XlmRobertaTokenizer> pieces,
                             SpecialTokens specials)
    : Tokenizer(std::move(specials)), pieces_(std::move(pieces)) {}

absl::StatusOr<std::unique_ptr<XlmrTokenizer>> XlmrTokenizer::FromFile(
    const std::string& sentencepiece_model,
    const XlmRobertaTokenizerOptions& options) {
  absl::StatusOr<std::unique_ptr<XlmRobertaTokenizer>> pieces =
      XlmRobertaTokenizer::FromFile(sentencepiece_model, options);
  if (!pieces.ok()) return pieces.status();
  SpecialTokens s;
  s.pair_separators = 2;
  s.cls_id = XlmRobertaTokenizer::kBosId;
  s.cls = "<s>";
  s.sep_id = XlmRobertaTokenizer::kEosId;
  s.sep = "</s>";
  s.pad_id = XlmRobertaTokenizer::kPadId;
  s.pad = "<pad>";
  s.unk_id = XlmRobertaTokenizer::kUnkId;
  s.unk = "<unk>";
  s.mask_id = (*pieces)->mask_id();
  s.mask = "<mask>";
  return std::unique_ptr<XlmrTokenizer>(
      new XlmrTokenizer(*std::move(pieces), std::move(s)));
}

absl::StatusOr<std::vector<Token>> XlmrTokenizer::Tokenize(
    std::string_view text) const {
  absl::StatusOr<DecodedText> decoded = Decode(text);
  if (!decoded.ok()) return decoded.status();
  absl::StatusOr<std::vector<SentencePieceToken>> pieces =
      pieces_->Tokenize(text);
  if (!pieces.ok()) return pieces.status();
  std::vector<Token> out;
  out.reserve(pieces->size());
  int word = -1;
  bool after_special = true;
  for (SentencePieceToken& p : *pieces) {
    const bool starts_word =
        after_special || p.special || absl::StartsWith(p.piece, "\u2581");
    if (starts_word) ++word;
    after_special = p.special;
    Token t;
    t.text = std::move(p.piece);
    t.id = p.id;
    t.byte_start = p.byte_start;
    t.byte_end = p.byte_end;
    t.char_start = CharAt(*decoded, t.byte_start);
    t.char_end = CharAt(*decoded, t.byte_end);
    t.word_index = word;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace bertology
