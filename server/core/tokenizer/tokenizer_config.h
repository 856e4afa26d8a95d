// Reads a checkpoint's tokenizer_config.json (HF's BertTokenizer /
// BertTokenizerFast settings) into TokenizerOptions.
#ifndef BERTOLOGY_CORE_TOKENIZER_CONFIG_H_
#define BERTOLOGY_CORE_TOKENIZER_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/core/tokenizer/bert_tokenizer.h"

namespace bertology {

// Fields read, with HF's defaults when absent (an absent file gives
// TokenizerOptions{}):
//   do_lower_case (bool, true), strip_accents (bool or null, null),
//   tokenize_chinese_chars (bool, true), never_split (list of strings or
//   null, none);
//   special tokens kept whole in the text: unk_token, sep_token, pad_token,
//   cls_token, mask_token (defaults "[UNK]" "[SEP]" "[PAD]" "[CLS]"
//   "[MASK]"; null removes one), bos_token and eos_token (no default), the
//   entries of additional_special_tokens and the contents of
//   added_tokens_decoder. Each is a string or an AddedToken object
//   ({"content": ..., "lstrip", "rstrip", "single_word", "normalized",
//   "special"}); lstrip and rstrip change nothing for BERT, whose basic
//   tokenizer drops the whitespace they would strip; single_word true is
//   refused, as not implemented.
//   do_basic_tokenize: only true is accepted (false is not implemented).
// Other fields are ignored. Errors (INVALID_ARGUMENT) name `path` and, for
// a field of the wrong type, the field: malformed JSON, not an object, an
// unreadable file.
absl::StatusOr<TokenizerOptions> ReadTokenizerConfig(const std::string& path);

// RoBERTa's tokenizer settings (RobertaTokenizer's defaults).
struct RobertaTokenizerOptions {
  bool add_prefix_space = false;
  std::string bos_token = "<s>", eos_token = "</s>", unk_token = "<unk>",
              pad_token = "<pad>", mask_token = "<mask>";
  // <mask> swallows the whitespace before it (HF's AddedToken lstrip, which
  // RobertaTokenizer sets).
  bool mask_lstrip = true;
};

// RoBERTa's tokenizer_config.json, read with the same rules and errors as
// ReadTokenizerConfig: add_prefix_space (bool); bos_token, eos_token,
// unk_token, pad_token, mask_token (a string or an AddedToken object; null
// keeps the default); mask_lstrip from <mask>'s AddedToken (in mask_token
// or added_tokens_decoder). An absent file gives RobertaTokenizerOptions{}.
absl::StatusOr<RobertaTokenizerOptions> ReadRobertaTokenizerConfig(
    const std::string& path);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_CONFIG_H_
