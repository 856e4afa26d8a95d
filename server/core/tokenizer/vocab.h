// A WordPiece vocabulary: one token per line, the line number is the id.
#ifndef BERTOLOGY_CORE_VOCAB_H_
#define BERTOLOGY_CORE_VOCAB_H_

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

// Immutable after construction; safe to share between threads.
class Vocab {
 public:
  // Errors name `path`: missing/unreadable file, empty vocab, a missing
  // special token ([CLS], [SEP], [UNK], [PAD]).
  static absl::StatusOr<Vocab> FromFile(const std::string& path);
  static absl::StatusOr<Vocab> FromTokens(std::vector<std::string> tokens,
                                          const std::string& source);

  // -1 when absent.
  int Id(std::string_view token) const;
  bool Contains(std::string_view token) const { return Id(token) >= 0; }
  const std::string& Token(int id) const { return tokens_[id]; }
  int size() const { return static_cast<int>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }

  int cls_id() const { return cls_id_; }
  int sep_id() const { return sep_id_; }
  int unk_id() const { return unk_id_; }
  int pad_id() const { return pad_id_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  int cls_id_ = -1, sep_id_ = -1, unk_id_ = -1, pad_id_ = -1;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_VOCAB_H_
