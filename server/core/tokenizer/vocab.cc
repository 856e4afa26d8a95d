#include "server/core/tokenizer/vocab.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace bertology {

absl::StatusOr<Vocab> Vocab::FromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("vocab file ", path, ": cannot open for reading"));
  }
  std::vector<std::string> tokens;
  std::string line;
  // As HF's load_vocab: one token per line, only the line break is removed
  // (a CRLF file loses its '\r' too).
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(std::move(line));
    line.clear();
  }
  if (in.bad()) {
    return absl::DataLossError(
        absl::StrCat("vocab file ", path, ": read error"));
  }
  return FromTokens(std::move(tokens), path);
}

absl::StatusOr<Vocab> Vocab::FromTokens(std::vector<std::string> tokens,
                                        const std::string& source) {
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab ", source, ": empty, no tokens"));
  }
  Vocab vocab;
  vocab.ids_.reserve(tokens.size());
  DecodedText scratch;
  for (size_t i = 0; i < tokens.size(); ++i) {
    absl::Status utf8 = DecodeUtf8(tokens[i], &scratch);
    if (!utf8.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vocab ", source, ": line ", i + 1, ": ", utf8.message()));
    }
    // A duplicated token maps to its last line, as a Python dict built
    // line by line (HF's load_vocab) does.
    vocab.ids_[tokens[i]] = static_cast<int>(i);
  }
  vocab.tokens_ = std::move(tokens);
  struct Special {
    const char* token;
    int* id;
  };
  for (const Special& s :
       {Special{"[CLS]", &vocab.cls_id_}, Special{"[SEP]", &vocab.sep_id_},
        Special{"[UNK]", &vocab.unk_id_}, Special{"[PAD]", &vocab.pad_id_}}) {
    *s.id = vocab.Id(s.token);
    if (*s.id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("vocab ", source, ": missing special token ", s.token));
    }
  }
  return vocab;
}

int Vocab::Id(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

}  // namespace bertology
