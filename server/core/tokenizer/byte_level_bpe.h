// RoBERTa's (GPT-2's) byte-level BPE tokenizer from HF's vocab.json and
// merges.txt, with no libtorch: special tokens split out first, GPT-2's
// pre-tokenisation regex (RE2), bytes mapped to printable code points, BPE
// merges by rank. Matches HF's RobertaTokenizerFast (ids and offsets,
// trim_offsets on) on tests/golden/byte-bpe/golden.jsonl, which
// tests/golden/make_byte_bpe_golden.py writes.
//
// Thread safety: immutable after FromFiles; Tokenize and Encode may be
// called from many threads at once (no cache).
#ifndef BERTOLOGY_SERVER_CORE_TOKENIZER_BYTE_LEVEL_BPE_H_
#define BERTOLOGY_SERVER_CORE_TOKENIZER_BYTE_LEVEL_BPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}

namespace bertology {

struct ByteLevelBpeOptions {
  // As HF's add_prefix_space: a ' ' before every piece of text between
  // special tokens that does not start with ' ' (RoBERTa's default: off).
  bool add_prefix_space = false;
  // Split out of the text first, as whole strings (HF's added tokens).
  std::vector<std::string> special_tokens = {"<s>", "</s>", "<unk>", "<pad>",
                                             "<mask>"};
  // Special tokens that swallow the whitespace before them (HF's
  // lstrip=True: RobertaTokenizer makes `<mask>` so, and the goldens show
  // "a <mask>" gives no token for the space).
  std::vector<std::string> lstrip_special_tokens = {"<mask>"};
  // For a byte whose character the vocabulary lacks (none with a full
  // byte alphabet, as every trained byte-level vocabulary has).
  std::string unk_token = "<unk>";
  // RoBERTa's sequence specials, for Encode.
  std::string bos_token = "<s>";
  std::string eos_token = "</s>";
};

// One token. Offsets are UTF-8 byte offsets into the text tokenized, with
// HF's trim_offsets (leading/trailing 'Ġ' spaces not covered) and widened
// to whole characters (the two tokens of a split emoji both cover it all):
// HF's fast offsets, which are character offsets, converted to bytes.
struct ByteBpeToken {
  int id = 0;
  std::string piece;  // The byte-level string, as in vocab.json.
  size_t byte_start = 0;
  size_t byte_end = 0;
  // Index of the pre-token (GPT-2 regex match) or special token it came
  // from, counted from 0 in Tokenize's text: HF fast's word_ids().
  int word = 0;
};

struct ByteBpeEncoding {
  std::vector<ByteBpeToken> tokens;  // Specials have offsets [0, 0).
  // 0 for text_a's tokens, 1 for text_b's, -1 for the added specials;
  // offsets point into the text of their sequence.
  std::vector<int> sequence_ids;
};

class ByteLevelBpe {
 public:
  // NOT_FOUND when a file cannot be opened; INVALID_ARGUMENT naming the
  // file (and line) for a malformed vocab.json or merges.txt.
  static absl::StatusOr<std::unique_ptr<ByteLevelBpe>> FromFiles(
      const std::string& vocab_json_path, const std::string& merges_txt_path,
      const ByteLevelBpeOptions& options = {});
  ~ByteLevelBpe();

  // INVALID_ARGUMENT for text that is not valid UTF-8.
  absl::StatusOr<std::vector<ByteBpeToken>> Tokenize(
      std::string_view text) const;

  // `<s> a </s>` or `<s> a </s></s> b </s>`, as RobertaTokenizerFast.
  absl::StatusOr<ByteBpeEncoding> Encode(
      std::string_view text_a,
      std::optional<std::string_view> text_b = std::nullopt) const;

  // -1 when absent.
  int TokenToId(std::string_view token) const;
  int vocab_size() const { return static_cast<int>(ids_.size()); }

 private:
  struct Merge {
    int rank;
    int merged_id;
  };
  ByteLevelBpe() = default;

  // Appends the tokens of text[begin, end), which holds no special token,
  // with offsets in characters (`char_of_byte` maps each byte of `text` to
  // the index of its character).
  absl::Status TokenizePiece(std::string_view text, size_t begin, size_t end,
                             const std::vector<int>& char_of_byte,
                             std::vector<ByteBpeToken>* out) const;
  // BPE over the bytes of one pre-token; [begin, end) byte spans of each.
  void Bpe(std::string_view word, std::vector<int>* ids,
           std::vector<std::pair<size_t, size_t>>* spans) const;

  ByteLevelBpeOptions options_;
  absl::flat_hash_map<std::string, int> ids_;
  absl::flat_hash_map<int, std::string> pieces_;  // id -> token.
  absl::flat_hash_map<uint64_t, Merge> merges_;   // (left << 32 | right).
  std::array<int, 256> byte_ids_{};               // -1 when not in vocab.
  std::array<std::string, 256> byte_chars_;       // GPT-2's bytes_to_unicode.
  int unk_id_ = -1;
  int bos_id_ = -1;
  int eos_id_ = -1;
  std::unique_ptr<re2::RE2> pretokenizer_;
};

}  // namespace bertology

#endif  // BERTOLOGY_SERVER_CORE_TOKENIZER_BYTE_LEVEL_BPE_H_
