#include "server/core/tokenizer/tokenizer_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace bertology {
namespace {

using json = nlohmann::json;

absl::Status WrongType(const std::string& path, const std::string& field,
                       const char* expected, const json& value) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": field ", field,
                                                 " must be ", expected,
                                                 ", not ", value.type_name()));
}

absl::Status ReadBool(const std::string& path, const json& config,
                      const char* field, bool* out) {
  const auto it = config.find(field);
  if (it == config.end()) return absl::OkStatus();
  if (!it->is_boolean()) return WrongType(path, field, "a bool", *it);
  *out = it->get<bool>();
  return absl::OkStatus();
}

// The content of a special token given as a string or as an AddedToken
// object; nullopt for null (HF: no such token).
absl::StatusOr<std::optional<std::string>> ReadSpecialToken(
    const std::string& path, const std::string& field, const json& value) {
  if (value.is_null()) return std::optional<std::string>();
  if (value.is_string()) return std::optional<std::string>(value);
  if (!value.is_object()) {
    return WrongType(path, field, "a string, an AddedToken object or null",
                     value);
  }
  const auto content = value.find("content");
  if (content == value.end() || !content->is_string()) {
    return WrongType(path, field + ".content", "a string",
                     content == value.end() ? json() : *content);
  }
  for (const char* flag :
       {"lstrip", "rstrip", "single_word", "normalized", "special"}) {
    const auto it = value.find(flag);
    if (it != value.end() && !it->is_boolean()) {
      return WrongType(path, absl::StrCat(field, ".", flag), "a bool", *it);
    }
  }
  // single_word changes which occurrences match; honouring it is not
  // implemented, and matching anyway would tokenize differently from HF.
  const auto single_word = value.find("single_word");
  if (single_word != value.end() && single_word->get<bool>()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field ", field,
                     ".single_word: true is not supported (special tokens "
                     "are matched anywhere in the text)"));
  }
  return std::optional<std::string>(content->get<std::string>());
}

absl::StatusOr<TokenizerOptions> Parse(const std::string& path,
                                       const json& config) {
  TokenizerOptions options;
  absl::Status status;
  if (!(status =
            ReadBool(path, config, "do_lower_case", &options.do_lower_case))
           .ok() ||
      !(status = ReadBool(path, config, "tokenize_chinese_chars",
                          &options.tokenize_chinese_chars))
           .ok()) {
    return status;
  }
  if (const auto it = config.find("strip_accents"); it != config.end()) {
    if (it->is_boolean()) {
      options.strip_accents = it->get<bool>();
    } else if (!it->is_null()) {
      return WrongType(path, "strip_accents", "a bool or null", *it);
    }
  }
  bool basic = true;
  if (!(status = ReadBool(path, config, "do_basic_tokenize", &basic)).ok()) {
    return status;
  }
  if (!basic) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": field do_basic_tokenize: false is not supported "
                     "(WordPiece always runs after the basic tokenizer)"));
  }
  if (const auto it = config.find("never_split"); it != config.end()) {
    if (!it->is_null() && !it->is_array()) {
      return WrongType(path, "never_split", "a list of strings or null", *it);
    }
    if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const json& entry = (*it)[i];
        if (!entry.is_string()) {
          return WrongType(path, absl::StrCat("never_split[", i, "]"),
                           "a string", entry);
        }
        options.never_split.push_back(entry.get<std::string>());
      }
    }
  }

  // Special tokens: BertTokenizer's five defaults unless the config names
  // them otherwise, then bos/eos, additional_special_tokens and the added
  // tokens, all split out of the text by HF before tokenizing.
  std::vector<std::string> special;
  auto add = [&](std::optional<std::string> token) {
    if (token.has_value() && !token->empty() &&
        std::find(special.begin(), special.end(), *token) == special.end()) {
      special.push_back(*std::move(token));
    }
  };
  auto read_and_add = [&](const std::string& field, const json& value) {
    absl::StatusOr<std::optional<std::string>> token =
        ReadSpecialToken(path, field, value);
    if (token.ok()) add(*std::move(token));
    return token.status();
  };
  const std::pair<const char*, const char*> kNamed[] = {
      {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"},   {"pad_token", "[PAD]"},
      {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}, {"bos_token", nullptr},
      {"eos_token", nullptr}};
  for (const auto& [field, default_token] : kNamed) {
    const auto it = config.find(field);
    if (it == config.end()) {
      if (default_token != nullptr) add(std::string(default_token));
      continue;
    }
    if (!(status = read_and_add(field, *it)).ok()) return status;
  }
  if (const auto it = config.find("additional_special_tokens");
      it != config.end() && !it->is_null()) {
    if (!it->is_array()) {
      return WrongType(path, "additional_special_tokens",
                       "a list of tokens or null", *it);
    }
    for (size_t i = 0; i < it->size(); ++i) {
      status = read_and_add(absl::StrCat("additional_special_tokens[", i, "]"),
                            (*it)[i]);
      if (!status.ok()) return status;
    }
  }
  if (const auto it = config.find("added_tokens_decoder");
      it != config.end() && !it->is_null()) {
    if (!it->is_object()) {
      return WrongType(path, "added_tokens_decoder",
                       "an object of AddedToken objects", *it);
    }
    for (const auto& [id, value] : it->items()) {
      const std::string field = absl::StrCat("added_tokens_decoder.", id);
      if (!value.is_object()) {
        return WrongType(path, field, "an AddedToken object", value);
      }
      if (!(status = read_and_add(field, value)).ok()) return status;
    }
  }
  options.special_tokens = std::move(special);
  return options;
}

}  // namespace

namespace {

// The file as a JSON object; nullopt when it does not exist (an optional
// file: HF's defaults).
absl::StatusOr<std::optional<json>> ReadJsonObject(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::optional<json>();
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  json config;
  try {
    config = json::parse(buf.str());
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double
    // ("1e999999") is out_of_range (406), thrown by the same parse.
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": malformed JSON: ", e.what()));
  }
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": must be a JSON object, not ", config.type_name()));
  }
  return std::optional<json>(std::move(config));
}

// An AddedToken object's lstrip, when it is one and says.
std::optional<bool> Lstrip(const json& value) {
  if (!value.is_object()) return std::nullopt;
  const auto it = value.find("lstrip");
  if (it == value.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

absl::StatusOr<RobertaTokenizerOptions> ParseRoberta(const std::string& path,
                                                     const json& config) {
  RobertaTokenizerOptions options;
  absl::Status status =
      ReadBool(path, config, "add_prefix_space", &options.add_prefix_space);
  if (!status.ok()) return status;
  const std::pair<const char*, std::string*> kNamed[] = {
      {"bos_token", &options.bos_token},
      {"eos_token", &options.eos_token},
      {"unk_token", &options.unk_token},
      {"pad_token", &options.pad_token},
      {"mask_token", &options.mask_token}};
  for (const auto& [field, out] : kNamed) {
    const auto it = config.find(field);
    if (it == config.end()) continue;
    absl::StatusOr<std::optional<std::string>> token =
        ReadSpecialToken(path, field, *it);
    if (!token.ok()) return token.status();
    if (token->has_value()) *out = **token;
  }
  if (const auto it = config.find("mask_token"); it != config.end()) {
    options.mask_lstrip = Lstrip(*it).value_or(options.mask_lstrip);
  }
  // save_pretrained writes each special's AddedToken here too.
  if (const auto it = config.find("added_tokens_decoder");
      it != config.end() && it->is_object()) {
    for (const auto& [id, value] : it->items()) {
      if (value.is_object() &&
          value.value("content", "") == options.mask_token) {
        options.mask_lstrip = Lstrip(value).value_or(options.mask_lstrip);
      }
    }
  }
  return options;
}

}  // namespace

absl::StatusOr<TokenizerOptions> ReadTokenizerConfig(const std::string& path) {
  absl::StatusOr<std::optional<json>> config = ReadJsonObject(path);
  if (!config.ok()) return config.status();
  if (!config->has_value()) return TokenizerOptions{};
  return Parse(path, **config);
}

absl::StatusOr<RobertaTokenizerOptions> ReadRobertaTokenizerConfig(
    const std::string& path) {
  absl::StatusOr<std::optional<json>> config = ReadJsonObject(path);
  if (!config.ok()) return config.status();
  if (!config->has_value()) return RobertaTokenizerOptions{};
  return ParseRoberta(path, **config);
}

}  // namespace bertology
