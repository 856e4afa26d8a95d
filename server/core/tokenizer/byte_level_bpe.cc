#include "server/core/tokenizer/byte_level_bpe.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace bertology {
namespace {

// Unicode's White_Space: what \s means to HF's regex engines (Oniguruma in
// `tokenizers`, `regex` in the slow tokenizer). RE2's own \s is ASCII only.
constexpr char kSpaceClass[] =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
    "\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool IsWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// GPT-2's pattern less its `\s+(?!\S)` alternative, which RE2 (no
// lookahead) cannot say; Tokenize emulates it on the captured `(\s+)`.
std::string PretokenizerPattern() {
  const std::string s = kSpaceClass;
  return absl::StrCat("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^", s,
                      "\\p{L}\\p{N}]+|([", s, "]+)");
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
// the rest for U+0100 onwards in byte order.
std::array<std::string, 256> BytesToUnicode() {
  std::array<std::string, 256> chars;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable =
        (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    AppendUtf8(printable ? static_cast<char32_t>(b) : next++, &chars[b]);
  }
  return chars;
}

uint64_t PairKey(int left, int right) {
  return (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
}

absl::Status ReadVocab(const std::string& path,
                       absl::flat_hash_map<std::string, int>* ids,
                       absl::flat_hash_map<int, std::string>* pieces) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("vocab file ", path, ": cannot open for reading"));
  }
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab file ", path, ": not JSON: ", e.what()));
  }
  if (!json.is_object() || json.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vocab file ", path, ": expected a non-empty object token -> id"));
  }
  for (const auto& [token, id] : json.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > INT_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("vocab file ", path, ": token \"", token, "\": id ",
                       id.dump(), " is not an id"));
    }
    const int value = id.get<int>();
    if (!pieces->emplace(value, token).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("vocab file ", path, ": id ", value, " given to \"",
                       (*pieces)[value], "\" and \"", token, "\""));
    }
    (*ids)[token] = value;
  }
  return absl::OkStatus();
}

}  // namespace

ByteLevelBpe::~ByteLevelBpe() = default;

absl::StatusOr<std::unique_ptr<ByteLevelBpe>> ByteLevelBpe::FromFiles(
    const std::string& vocab_json_path, const std::string& merges_txt_path,
    const ByteLevelBpeOptions& options) {
  std::unique_ptr<ByteLevelBpe> bpe(new ByteLevelBpe());
  bpe->options_ = options;
  absl::Status status = ReadVocab(vocab_json_path, &bpe->ids_, &bpe->pieces_);
  if (!status.ok()) return status;

  std::vector<std::string> required = options.special_tokens;
  required.push_back(options.bos_token);
  required.push_back(options.eos_token);
  for (const std::string& token : required) {
    if (bpe->TokenToId(token) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("vocab file ", vocab_json_path, ": special token \"",
                       token, "\" is missing"));
    }
  }
  bpe->bos_id_ = bpe->TokenToId(options.bos_token);
  bpe->eos_id_ = bpe->TokenToId(options.eos_token);
  bpe->unk_id_ = bpe->TokenToId(options.unk_token);
  bpe->byte_chars_ = BytesToUnicode();
  for (int b = 0; b < 256; ++b) {
    bpe->byte_ids_[b] = bpe->TokenToId(bpe->byte_chars_[b]);
  }

  std::ifstream in(merges_txt_path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("merges file ", merges_txt_path,
                                            ": cannot open for reading"));
  }
  int rank = 0;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // HF skips the "#version: 0.2" header; blank lines (a trailing one)
    // carry no merge.
    if ((line_no == 1 && line.rfind("#version", 0) == 0) || line.empty()) {
      continue;
    }
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "merges file ", merges_txt_path, ": line ", line_no,
          ": expected two tokens separated by one space, got \"", line, "\""));
    }
    const std::string left = line.substr(0, space);
    const std::string right = line.substr(space + 1);
    const int merged = bpe->TokenToId(left + right);
    for (const std::string& token : {left, right, left + right}) {
      if (bpe->TokenToId(token) < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "merges file ", merges_txt_path, ": line ", line_no, ": token \"",
            token, "\" is not in ", vocab_json_path));
      }
    }
    // A repeated pair takes its later rank, as HF's dicts do.
    bpe->merges_.insert_or_assign(
        PairKey(bpe->TokenToId(left), bpe->TokenToId(right)),
        Merge{rank++, merged});
  }
  if (in.bad()) {
    return absl::DataLossError(
        absl::StrCat("merges file ", merges_txt_path, ": read error"));
  }

  bpe->pretokenizer_ = std::make_unique<re2::RE2>(PretokenizerPattern());
  if (!bpe->pretokenizer_->ok()) {
    return absl::InternalError(
        absl::StrCat("byte-level BPE pattern: ", bpe->pretokenizer_->error()));
  }
  return bpe;
}

int ByteLevelBpe::TokenToId(std::string_view token) const {
  // Debian 12's abseil has its own string_view, not std's.
  auto it = ids_.find(absl::string_view(token.data(), token.size()));
  return it == ids_.end() ? -1 : it->second;
}

void ByteLevelBpe::Bpe(std::string_view word, std::vector<int>* ids,
                       std::vector<std::pair<size_t, size_t>>* spans) const {
  ids->clear();
  spans->clear();
  for (size_t i = 0; i < word.size(); ++i) {
    ids->push_back(byte_ids_[static_cast<unsigned char>(word[i])]);
    spans->emplace_back(i, i + 1);
  }
  // GPT-2's loop: merge every occurrence of the lowest-ranked adjacent
  // pair, left to right, until no pair has a merge. Quadratic in the
  // length of one pre-token, which is a word or a run of one class.
  std::vector<int> next_ids;
  std::vector<std::pair<size_t, size_t>> next_spans;
  while (ids->size() > 1) {
    const Merge* best = nullptr;
    uint64_t best_key = 0;
    for (size_t k = 0; k + 1 < ids->size(); ++k) {
      if ((*ids)[k] < 0 || (*ids)[k + 1] < 0) continue;
      const uint64_t key = PairKey((*ids)[k], (*ids)[k + 1]);
      auto it = merges_.find(key);
      if (it != merges_.end() &&
          (best == nullptr || it->second.rank < best->rank)) {
        best = &it->second;
        best_key = key;
      }
    }
    if (best == nullptr) break;
    next_ids.clear();
    next_spans.clear();
    for (size_t k = 0; k < ids->size(); ++k) {
      if (k + 1 < ids->size() && (*ids)[k] >= 0 && (*ids)[k + 1] >= 0 &&
          PairKey((*ids)[k], (*ids)[k + 1]) == best_key) {
        next_ids.push_back(best->merged_id);
        next_spans.emplace_back((*spans)[k].first, (*spans)[k + 1].second);
        ++k;
      } else {
        next_ids.push_back((*ids)[k]);
        next_spans.push_back((*spans)[k]);
      }
    }
    ids->swap(next_ids);
    spans->swap(next_spans);
  }
}

absl::Status ByteLevelBpe::TokenizePiece(std::string_view text, size_t begin,
                                         size_t end,
                                         const std::vector<int>& char_of_byte,
                                         std::vector<ByteBpeToken>* out) const {
  if (begin == end) return absl::OkStatus();
  // HF's ByteLevel pre-tokenizer prepends the space to each piece between
  // special tokens, aligned to the piece's first character.
  const bool prefixed = options_.add_prefix_space && text[begin] != ' ';
  std::string work = prefixed ? " " : "";
  work.append(text.substr(begin, end - begin));
  auto char_of = [&](size_t j) {
    return char_of_byte[begin + j - (prefixed && j > 0 ? 1 : 0)];
  };
  const re2::StringPiece input(work.data(), work.size());
  std::vector<int> ids;
  std::vector<std::pair<size_t, size_t>> spans;
  auto emit = [&](size_t from, size_t to) -> absl::Status {
    Bpe(std::string_view(work).substr(from, to - from), &ids, &spans);
    const int word = out->empty() ? 0 : out->back().word + 1;
    for (size_t k = 0; k < ids.size(); ++k) {
      int id = ids[k];
      if (id < 0) {
        if (unk_id_ < 0) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "byte 0x%02x has no token in the vocabulary and \"%s\" is "
              "not in it either",
              static_cast<unsigned char>(work[from + spans[k].first]),
              options_.unk_token));
        }
        id = unk_id_;
      }
      out->push_back(
          {id, pieces_.at(id),
           static_cast<size_t>(char_of(from + spans[k].first)),
           static_cast<size_t>(char_of(from + spans[k].second - 1) + 1), word});
    }
    return absl::OkStatus();
  };
  size_t pos = 0;
  re2::StringPiece match[2];
  while (pos < work.size()) {
    if (!pretokenizer_->Match(input, pos, work.size(), re2::RE2::UNANCHORED,
                              match, 2)) {
      return emit(pos, work.size());  // Unreachable: every character matches.
    }
    size_t from = match[0].data() - work.data();
    size_t to = from + match[0].size();
    if (from > pos) {
      absl::Status status = emit(pos, from);
      if (!status.ok()) return status;
    }
    // `\s+(?!\S)`: a whitespace run followed by more text gives its last
    // character back, to join the next word (" word") or stand alone.
    if (match[1].data() != nullptr && to < work.size()) {
      size_t last = to - 1;
      while ((static_cast<unsigned char>(work[last]) & 0xC0) == 0x80) --last;
      if (last > from) to = last;
    }
    absl::Status status = emit(from, to);
    if (!status.ok()) return status;
    pos = to;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ByteBpeToken>> ByteLevelBpe::Tokenize(
    std::string_view text) const {
  // Character index of every byte, and byte offset of every character.
  std::vector<int> char_of_byte(text.size());
  std::vector<size_t> char_bytes;
  std::vector<char32_t> chars;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const int len = Utf8SequenceAt(text, i, &cp);
    if (len == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("text is not valid UTF-8 at byte ", i));
    }
    std::fill_n(char_of_byte.begin() + i, len, chars.size());
    char_bytes.push_back(i);
    chars.push_back(cp);
    i += len;
  }
  char_bytes.push_back(text.size());

  std::vector<ByteBpeToken> tokens;
  size_t piece_begin = 0;
  for (size_t i = 0; i < text.size();) {
    // HF's added tokens: the longest special token starting here.
    const std::string* special = nullptr;
    for (const std::string& s : options_.special_tokens) {
      if (!s.empty() && text.compare(i, s.size(), s) == 0 &&
          (special == nullptr || s.size() > special->size())) {
        special = &s;
      }
    }
    if (special == nullptr) {
      ++i;
      continue;
    }
    size_t piece_end = i;
    if (std::count(options_.lstrip_special_tokens.begin(),
                   options_.lstrip_special_tokens.end(), *special) > 0) {
      while (piece_end > piece_begin &&
             IsWhiteSpace(chars[char_of_byte[piece_end - 1]])) {
        piece_end = char_bytes[char_of_byte[piece_end - 1]];
      }
    }
    absl::Status status =
        TokenizePiece(text, piece_begin, piece_end, char_of_byte, &tokens);
    if (!status.ok()) return status;
    i += special->size();
    const size_t end_char = i == text.size() ? chars.size() : char_of_byte[i];
    tokens.push_back({TokenToId(*special), *special,
                      static_cast<size_t>(char_of_byte[i - special->size()]),
                      end_char, tokens.empty() ? 0 : tokens.back().word + 1});
    piece_begin = i;
  }
  absl::Status status =
      TokenizePiece(text, piece_begin, text.size(), char_of_byte, &tokens);
  if (!status.ok()) return status;

  // HF's trim_offsets (process_offsets in tokenizers' byte_level.rs), in
  // characters: a token's leading and trailing 'Ġ's are not covered,
  // except the one add_prefix_space put before the first token.
  const std::string kSpace = byte_chars_[' '];
  for (size_t k = 0; k < tokens.size(); ++k) {
    ByteBpeToken& t = tokens[k];
    size_t leading = 0, trailing = 0;
    while ((leading + 1) * kSpace.size() <= t.piece.size() &&
           t.piece.compare(leading * kSpace.size(), kSpace.size(), kSpace) ==
               0) {
      ++leading;
    }
    while ((trailing + 1) * kSpace.size() <= t.piece.size() &&
           t.piece.compare(t.piece.size() - (trailing + 1) * kSpace.size(),
                           kSpace.size(), kSpace) == 0) {
      ++trailing;
    }
    const bool is_first = k == 0 || t.byte_start == 0;
    if (is_first && options_.add_prefix_space && leading == 1) leading = 0;
    t.byte_start = std::min(t.byte_start + leading, t.byte_end);
    if (trailing > 0 && t.byte_end >= trailing) {
      t.byte_end = std::max(t.byte_end - trailing, t.byte_start);
    }
    // Characters to bytes.
    t.byte_start = char_bytes[t.byte_start];
    t.byte_end = char_bytes[t.byte_end];
  }
  return tokens;
}

absl::StatusOr<ByteBpeEncoding> ByteLevelBpe::Encode(
    std::string_view text_a, std::optional<std::string_view> text_b) const {
  ByteBpeEncoding encoding;
  auto add_special = [&](int id) {
    encoding.tokens.push_back({id, pieces_.at(id), 0, 0});
    encoding.sequence_ids.push_back(-1);
  };
  auto add_text = [&](std::string_view text, int sequence) -> absl::Status {
    absl::StatusOr<std::vector<ByteBpeToken>> tokens = Tokenize(text);
    if (!tokens.ok()) return tokens.status();
    for (ByteBpeToken& t : *tokens) {
      encoding.tokens.push_back(std::move(t));
      encoding.sequence_ids.push_back(sequence);
    }
    return absl::OkStatus();
  };
  add_special(bos_id_);
  absl::Status status = add_text(text_a, 0);
  if (!status.ok()) return status;
  add_special(eos_id_);
  if (text_b.has_value()) {
    add_special(eos_id_);
    status = add_text(*text_b, 1);
    if (!status.ok()) return status;
    add_special(eos_id_);
  }
  return encoding;
}

}  // namespace bertology
