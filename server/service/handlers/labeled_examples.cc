// Labelled examples of SweepAblation, HeadImportance and PruneCurve: one
// validation and encoding for all three.
#include "server/service/handlers/labeled_examples.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/service/convert/request_validation.h"

namespace bertology {
namespace {

absl::Status CheckLabel(int label, const BertConfig& c,
                        const std::string& field) {
  const int num_labels = static_cast<int>(c.id2label.size());
  if (label < 0 || label >= num_labels) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, "=", label, " is outside the label set [0, ", num_labels, ")"));
  }
  return absl::OkStatus();
}

// Words (distinct word indices) of one text, before truncation.
absl::StatusOr<int> CountWords(const Tokenizer& tokenizer,
                               const std::string& text) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenizer.Tokenize(text));
  int words = 0, last = -1;
  for (const Token& t : tokens) {
    if (t.word_index != last) ++words;
    last = t.word_index;
  }
  return words;
}

// A token classifier's per-token labels from `example.word_labels()` (one
// per word of the untruncated input, text_a's then text_b's; -1 unscored):
// each word's first piece gets its word's label, as HF's token-
// classification examples do; other pieces, special tokens and words cut by
// truncation are not scored.
absl::StatusOr<std::vector<int>> TokenLabels(const Model& model,
                                             const v1::LabeledExample& example,
                                             const Encoding& encoding,
                                             const std::string& field) {
  const Tokenizer& tokenizer = model.tokenizer();
  ASSIGN_OR_RETURN(const int words_a,
                   CountWords(tokenizer, example.input().text_a()));
  int words_b = 0;
  if (!example.input().text_b().empty()) {
    ASSIGN_OR_RETURN(words_b, CountWords(tokenizer, example.input().text_b()));
  }
  if (example.word_labels_size() != words_a + words_b) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".word_labels has ", example.word_labels_size(),
                     " labels for an input of ", words_a + words_b, " words"));
  }
  for (int w = 0; w < example.word_labels_size(); ++w) {
    const int label = example.word_labels(w);
    if (label == kUnscoredToken) continue;
    RETURN_IF_ERROR(CheckLabel(label, model.config(),
                               absl::StrCat(field, ".word_labels[", w, "]")));
  }
  // The encoding numbers words densely after truncation; text_a loses words
  // from its end only, so its k-th word is still word k, and text_b's k-th
  // encoded word is word words_a + (k - text_a's kept words).
  int kept_a = 0;
  for (const Token& t : encoding.tokens) {
    if (!t.special && t.segment == 0) kept_a = t.word_index + 1;
  }
  std::vector<int> labels(encoding.tokens.size(), kUnscoredToken);
  int previous = -1;
  for (size_t i = 0; i < encoding.tokens.size(); ++i) {
    const Token& t = encoding.tokens[i];
    if (t.special || t.word_index == previous) continue;
    previous = t.word_index;
    const int word =
        t.segment == 0 ? t.word_index : words_a + (t.word_index - kept_a);
    labels[i] = example.word_labels(word);
  }
  return labels;
}

}  // namespace

absl::StatusOr<std::vector<SweepExample>> EncodeLabeledExamples(
    const ServiceLimits& limits, const ServedModel& served,
    const google::protobuf::RepeatedPtrField<v1::LabeledExample>& examples,
    int* truncated) {
  const Model& model = *served.model;
  const BertConfig& c = model.config();
  const bool per_token = model.head_kind() == HeadKind::kTokenClassification;
  std::vector<SweepExample> out;
  out.reserve(examples.size());
  for (int i = 0; i < examples.size(); ++i) {
    const v1::LabeledExample& e = examples.Get(i);
    const std::string field = absl::StrCat("examples[", i, "]");
    if (!per_token) {
      RETURN_IF_ERROR(CheckLabel(e.label(), c, field + ".label"));
    } else if (e.word_labels().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".word_labels is empty: model ", served.name,
                       " is a ", model.architecture(), ", scored per word"));
    }
    ASSIGN_OR_RETURN(Encoding encoding,
                     EncodeInput(model.tokenizer(), model.max_seq_len(),
                                 e.input(), field + ".input", limits));
    if (truncated != nullptr) *truncated += encoding.truncated ? 1 : 0;
    SweepExample example{std::move(encoding), per_token ? 0 : e.label(), {}};
    if (per_token) {
      ASSIGN_OR_RETURN(example.token_labels,
                       TokenLabels(model, e, example.encoding, field));
    }
    out.push_back(std::move(example));
  }
  return out;
}

}  // namespace bertology
