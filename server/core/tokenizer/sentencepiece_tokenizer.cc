#include "server/core/tokenizer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "server/core/tokenizer/sentencepiece_model.h"

namespace bertology {
namespace {

struct Special {
  std::string_view text;
  int id;  // -1: the mask, whose id depends on the model
};
constexpr Special kSpecials[] = {{"<s>", XlmRobertaTokenizer::kBosId},
                                 {"<pad>", XlmRobertaTokenizer::kPadId},
                                 {"</s>", XlmRobertaTokenizer::kEosId},
                                 {"<unk>", XlmRobertaTokenizer::kUnkId},
                                 {"<mask>", -1}};

// Python's str.isspace(), which HF's slow tokenizer uses (rstrip) for lstrip.
bool IsPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 ||
         c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

}  // namespace

XlmRobertaTokenizer::XlmRobertaTokenizer(
    std::unique_ptr<SentencePieceModel> model,
    XlmRobertaTokenizerOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      mask_id_(model_->size() + kFairseqOffset) {}

XlmRobertaTokenizer::~XlmRobertaTokenizer() = default;

absl::StatusOr<std::unique_ptr<XlmRobertaTokenizer>>
XlmRobertaTokenizer::FromFile(const std::string& sentencepiece_model_path,
                              const XlmRobertaTokenizerOptions& options) {
  // Read here rather than by sentencepiece's Load so that a missing file is
  // NOT_FOUND and a bad one INVALID_ARGUMENT, each naming the path.
  std::ifstream in(sentencepiece_model_path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read SentencePiece model ",
                                            sentencepiece_model_path));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string error;
  std::unique_ptr<SentencePieceModel> model =
      SentencePieceModel::Load(bytes.str(), &error);
  if (model == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        sentencepiece_model_path, " is not a SentencePiece model: ", error));
  }
  return std::unique_ptr<XlmRobertaTokenizer>(
      new XlmRobertaTokenizer(std::move(model), options));
}

void XlmRobertaTokenizer::EncodeSegment(
    std::string_view text, int offset,
    std::vector<SentencePieceToken>* out) const {
  // Each segment on its own, as HF's slow tokenizer: it gets sentencepiece's
  // dummy "▁" prefix even after a special token ("a<mask>b" -> "▁b").
  for (SentencePiece& sp : model_->Encode(text)) {
    SentencePieceToken token;
    token.id = sp.id == model_->unk_id() ? kUnkId : sp.id + kFairseqOffset;
    token.piece = std::move(sp.piece);
    token.byte_start = offset + sp.begin;
    token.byte_end = offset + sp.end;
    out->push_back(std::move(token));
  }
}

absl::StatusOr<std::vector<SentencePieceToken>> XlmRobertaTokenizer::Tokenize(
    std::string_view text) const {
  DecodedText decoded;
  if (absl::Status s = DecodeUtf8(text, &decoded); !s.ok()) return s;
  std::vector<SentencePieceToken> out;
  size_t segment_start = 0;
  auto flush = [&](size_t end) {
    EncodeSegment(text.substr(segment_start, end - segment_start),
                  static_cast<int>(segment_start), &out);
  };
  // Specials are ASCII and '<' never occurs inside a multi-byte sequence,
  // so a byte scan finds them; none is a prefix of another.
  for (size_t i = 0; i < text.size();) {
    const Special* match = nullptr;
    for (const Special& s : kSpecials) {
      if (text.substr(i, s.text.size()) == s.text) match = &s;
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    const bool is_mask = match->id < 0;
    size_t start = i;  // where the segment before it ends
    if (is_mask && options_.mask_lstrip) {
      // Step back over whole code points of whitespace.
      size_t cp = std::lower_bound(decoded.byte_offsets.begin(),
                                   decoded.byte_offsets.end(), int(i)) -
                  decoded.byte_offsets.begin();
      while (cp > 0 && decoded.byte_offsets[cp - 1] >= int(segment_start) &&
             IsPythonSpace(decoded.chars[cp - 1])) {
        --cp;
      }
      start = decoded.byte_offsets[cp];
    }
    flush(start);
    SentencePieceToken token;
    token.id = is_mask ? mask_id_ : match->id;
    token.piece = std::string(match->text);
    token.byte_start = static_cast<int>(start);
    token.byte_end = static_cast<int>(i + match->text.size());
    token.special = true;
    out.push_back(std::move(token));
    i += match->text.size();
    segment_start = i;
  }
  flush(text.size());
  for (auto& token : out) token.sequence = 0;
  return out;
}

absl::StatusOr<std::vector<SentencePieceToken>> XlmRobertaTokenizer::Encode(
    std::string_view text_a, std::optional<std::string_view> text_b) const {
  auto added = [](int id) {
    SentencePieceToken t;
    t.id = id;
    t.piece = id == kBosId ? "<s>" : "</s>";
    t.special = true;
    return t;
  };
  std::vector<SentencePieceToken> out = {added(kBosId)};
  absl::StatusOr<std::vector<SentencePieceToken>> a = Tokenize(text_a);
  if (!a.ok()) return a.status();
  out.insert(out.end(), a->begin(), a->end());
  out.push_back(added(kEosId));
  if (text_b.has_value()) {
    absl::StatusOr<std::vector<SentencePieceToken>> b = Tokenize(*text_b);
    if (!b.ok()) return b.status();
    out.push_back(added(kEosId));
    for (auto& token : *b) token.sequence = 1;
    out.insert(out.end(), b->begin(), b->end());
    out.push_back(added(kEosId));
  }
  return out;
}

}  // namespace bertology
