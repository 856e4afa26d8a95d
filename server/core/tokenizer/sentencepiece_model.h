// libsentencepiece, kept apart from the rest of the process. Debian's
// libsentencepiece.so bundles protobuf-lite 3.14 and exports its symbols;
// linked into a process that also has libtorch's and gRPC's libprotobuf
// 3.21, the two bind to each other's definitions and the process dies at
// start-up. So libsentencepiece is only ever loaded by dlopen, with
// RTLD_LOCAL | RTLD_DEEPBIND, through a small plugin
// (sentencepiece_plugin.cc, libbertology_sentencepiece_plugin.so, beside
// the binaries) that this wrapper calls. Its header also declares
// `namespace absl { using std::string_view; }`, which clashes with Debian's
// abseil, so only the plugin includes it. ASan refuses RTLD_DEEPBIND, so an
// ASan build cannot load XLM-R's tokenizer (Load says so).
#ifndef BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_
#define BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  // nullptr with the reason in `*error` when `serialized` is not a model
  // or the plugin cannot be loaded.
  static std::unique_ptr<SentencePieceModel> Load(const std::string& serialized,
                                                  std::string* error);
  ~SentencePieceModel();

  std::vector<SentencePiece> Encode(std::string_view text) const;
  int size() const;    // number of pieces
  int unk_id() const;  // sentencepiece's <unk>

 private:
  SentencePieceModel();
  void* processor_ = nullptr;  // the plugin's SentencePieceProcessor
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_TOKENIZER_SENTENCEPIECE_MODEL_H_
