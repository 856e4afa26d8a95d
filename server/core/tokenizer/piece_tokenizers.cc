// RobertaTokenizer and XlmrTokenizer: the piece models' tokens as Tokens.
#include "server/core/tokenizer/piece_tokenizers.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace bertology {
namespace {

// Character index of byte offset `byte` of a decoded text (offsets on a
// character boundary, or the end).
int CharAt(const DecodedText& decoded, int byte) {
  return static_cast<int>(std::lower_bound(decoded.byte_offsets.begin(),
                                           decoded.byte_offsets.end(), byte) -
                          decoded.byte_offsets.begin());
}

// The text's characters and their byte offsets (the end included).
absl::StatusOr<DecodedText> Decode(std::string_view text) {
  DecodedText decoded;
  absl::Status status = DecodeUtf8(text, &decoded);
  if (!status.ok()) return status;
  return decoded;
}

}  // namespace

RobertaTokenizer::RobertaTokenizer(std::unique_ptr<ByteLevelBpe> bpe,
                                   SpecialTokens specials)
    : Tokenizer(std::move(specials)), bpe_(std::move(bpe)) {}

absl::StatusOr<std::unique_ptr<RobertaTokenizer>> RobertaTokenizer::FromFiles(
    const std::string& vocab_json, const std::string& merges_txt,
    const RobertaTokenizerOptions& options) {
  ByteLevelBpeOptions bpe_options;
  bpe_options.add_prefix_space = options.add_prefix_space;
  bpe_options.special_tokens = {options.bos_token, options.eos_token,
                                options.unk_token, options.pad_token,
                                options.mask_token};
  bpe_options.lstrip_special_tokens.clear();
  if (options.mask_lstrip) {
    bpe_options.lstrip_special_tokens.push_back(options.mask_token);
  }
  bpe_options.unk_token = options.unk_token;
  bpe_options.bos_token = options.bos_token;
  bpe_options.eos_token = options.eos_token;
  absl::StatusOr<std::unique_ptr<ByteLevelBpe>> bpe =
      ByteLevelBpe::FromFiles(vocab_json, merges_txt, bpe_options);
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
