#include "server/core/tokenizer/basic_tokenizer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/utf8.h"
#include "utf8proc.h"

namespace bertology {
namespace {

utf8proc_category_t Category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

// Python's str.split() also splits on these, which _clean_text keeps
// (categories Zl, Zp): whitespace_tokenize therefore splits on them.
bool IsLineOrParagraphSeparator(char32_t cp) {
  return cp == 0x2028 || cp == 0x2029;
}

// Lower-cases token[i] as HF's tokenizers do: the simple lowercase mapping,
// one code point at a time. BertTokenizerFast (the tokenizers crate) and
// BertTokenizer.tokenize (which lower-cases the text character by
// character before its BasicTokenizer runs) both map a final capital sigma
// to U+03C3, not to the final form U+03C2 that Python's str.lower() on a
// whole word (google-research/bert) gives; tests/golden/
// tokenizer_hf.golden.jsonl checks it. (Python's one unconditional
// multi-character mapping, U+0130 -> "i\u0307", reduces to "i" after
// accent stripping, which always follows lower-casing here.)
char32_t LowerAt(const std::vector<char32_t>& text,
                 const std::vector<int>& token, size_t i) {
  return static_cast<char32_t>(
      utf8proc_tolower(static_cast<utf8proc_int32_t>(text[token[i]])));
}

int CombiningClass(char32_t cp) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))
      ->combining_class;
}

}  // namespace

bool IsBertWhitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return Category(cp) == UTF8PROC_CATEGORY_ZS;
}

// Follows HF (tokenization_utils.py _is_control and the tokenizers
// crate's BertNormalizer): every category C* (Cc, Cf, Cs, Co, Cn) except
// \t \n \r, which count as whitespace. The original Google BERT
// tokenization.py drops only Cc and Cf; the two differ on private-use (Co)
// and unassigned (Cn) code points, which HF drops and Google keeps.
// (Surrogates, Cs, cannot occur in decoded UTF-8.)
bool IsBertControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool IsBertPunctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
      (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  return IsUnicodePunctuation(cp);
}

bool IsUnicodePunctuation(char32_t cp) {
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool IsCjkIdeograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

BasicTokenizer::BasicTokenizer(BasicTokenizerOptions options)
    : options_(std::move(options)),
      strip_accents_(options_.strip_accents.value_or(options_.do_lower_case)) {
  for (const std::string& token : options_.never_split) {
    DecodedText decoded;
    // An entry that is not UTF-8 can match no decoded text.
    if (!DecodeUtf8(token, &decoded).ok()) continue;
    never_split_.emplace_back(decoded.chars.begin(), decoded.chars.end());
  }
}

void BasicTokenizer::Normalize(const std::vector<char32_t>& text,
                               const std::vector<int>& token, bool lower,
                               bool strip,
                               std::vector<NormalizedChar>* out) const {
  const size_t first = out->size();
  if (!lower && !strip) {
    for (int i : token) out->push_back({text[i], i, i + 1});
  } else {
    utf8proc_int32_t buf[32];
    for (size_t i = 0; i < token.size(); ++i) {
      const char32_t c = lower ? LowerAt(text, token, i) : text[token[i]];
      if (!strip) {
        out->push_back({c, token[i], token[i] + 1});
        // Python lower-cases U+0130 to "i" + U+0307, which only survives
        // when accents are kept.
        if (text[token[i]] == 0x130) {
          out->push_back({0x307, token[i], token[i] + 1});
        }
        continue;
      }
      int last_boundclass = 0;
      utf8proc_ssize_t n =
          utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 32,
                                  UTF8PROC_DECOMPOSE, &last_boundclass);
      if (n <= 0 || n > 32) {  // cannot happen for valid scalar values
        buf[0] = static_cast<utf8proc_int32_t>(c);
        n = 1;
      }
      for (utf8proc_ssize_t k = 0; k < n; ++k) {
        out->push_back({static_cast<char32_t>(buf[k]), token[i], token[i] + 1});
      }
    }
  }
  if (strip) {
    // Canonical ordering (the rest of NFD): stable sort of each run of
    // combining marks by combining class. Only matters for the marks that
    // survive stripping (a few Mc), but keeps this exact.
    auto begin = out->begin() + static_cast<std::ptrdiff_t>(first);
    for (auto run = begin; run != out->end();) {
      if (CombiningClass(run->cp) == 0) {
        ++run;
        continue;
      }
      auto end = run;
      while (end != out->end() && CombiningClass(end->cp) != 0) ++end;
      std::stable_sort(run, end,
                       [](const NormalizedChar& a, const NormalizedChar& b) {
                         return CombiningClass(a.cp) < CombiningClass(b.cp);
                       });
      run = end;
    }
    out->erase(std::remove_if(begin, out->end(),
                              [](const NormalizedChar& c) {
                                return Category(c.cp) == UTF8PROC_CATEGORY_MN;
                              }),
               out->end());
  }
  if (out->size() == first) return;
  // Attach characters that produced nothing to a neighbouring output.
  (*out)[first].orig_start = std::min((*out)[first].orig_start, token.front());
  for (size_t k = first; k < out->size(); ++k) {
    const int next =
        k + 1 < out->size() ? (*out)[k + 1].orig_start : token.back() + 1;
    (*out)[k].orig_end = std::max((*out)[k].orig_end, next);
  }
}

bool BasicTokenizer::IsNeverSplit(const std::vector<char32_t>& text,
                                  const std::vector<int>& token) const {
  for (const std::u32string& entry : never_split_) {
    if (entry.size() != token.size()) continue;
    bool equal = true;
    for (size_t i = 0; equal && i < token.size(); ++i) {
      const char32_t c =
          options_.do_lower_case ? LowerAt(text, token, i) : text[token[i]];
      equal = c == entry[i];
    }
    if (equal) return true;
  }
  return false;
}

std::vector<BasicWord> BasicTokenizer::Split(
    const std::vector<char32_t>& text,
    std::vector<bool>* never_split_word) const {
  if (never_split_word != nullptr) never_split_word->clear();
  std::vector<BasicWord> words;
  std::vector<int> token;
  std::vector<NormalizedChar> normalized;
  BasicWord word;
  auto end_word = [&](bool kept_whole = false) {
    if (!word.empty()) {
      words.push_back(std::move(word));
      if (never_split_word != nullptr) never_split_word->push_back(kept_whole);
    }
    word.clear();
  };
  auto flush_token = [&] {
    if (token.empty()) return;
    normalized.clear();
    if (!never_split_.empty() && IsNeverSplit(text, token)) {
      // As HF: the token (lower-cased, see never_split) is one word, with
      // no accent stripping and no punctuation split.
      Normalize(text, token, options_.do_lower_case, /*strip=*/false,
                &normalized);
      token.clear();
      word.assign(normalized.begin(), normalized.end());
      end_word(/*kept_whole=*/true);
      return;
    }
    Normalize(text, token, options_.do_lower_case, strip_accents_, &normalized);
    token.clear();
    for (const NormalizedChar& c : normalized) {
      if (IsBertWhitespace(c.cp) || IsLineOrParagraphSeparator(c.cp)) {
        end_word();
      } else if (IsBertPunctuation(c.cp)) {
        end_word();
        word.push_back(c);
        end_word();
      } else {
        word.push_back(c);
      }
    }
    end_word();
  };
  for (int i = 0; i < static_cast<int>(text.size()); ++i) {
    const char32_t cp = text[i];
    if (cp == 0 || cp == 0xFFFD || IsBertControl(cp)) continue;
    if (IsBertWhitespace(cp) || IsLineOrParagraphSeparator(cp)) {
      flush_token();
    } else if (options_.tokenize_chinese_chars && IsCjkIdeograph(cp)) {
      flush_token();
      token.push_back(i);
      flush_token();
    } else {
      token.push_back(i);
    }
  }
  flush_token();
  return words;
}

}  // namespace bertology
