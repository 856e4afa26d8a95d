// The one file that includes libsentencepiece's header. That header
// declares `namespace absl { using std::string_view; }`, which clashes
// with Debian's abseil (its own absl::string_view class), so no
// translation unit may include both: this wrapper speaks only std types.
#ifndef BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_
#define BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace bertology {

// One piece as sentencepiece gives it: its own id and [begin, end) in
// bytes of the text given to Encode (before normalisation).
struct SentencePiece {
  int id = 0;
  std::string piece;
  int begin = 0, end = 0;
};

// Immutable after Load; Encode is const and thread-safe (sentencepiece's
// Encode keeps no mutable state).
class SentencePieceModel {
 public:
  // nullptr with the reason in `*error` when `serialized` is not a model.
  static std::unique_ptr<SentencePieceModel> Load(const std::string& serialized,
                                                  std::string* error);
  ~SentencePieceModel();

  std::vector<SentencePiece> Encode(std::string_view text) const;
  int size() const;    // number of pieces
  int unk_id() const;  // sentencepiece's <unk>

 private:
  SentencePieceModel();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_
