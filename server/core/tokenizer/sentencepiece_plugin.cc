// The plugin that holds Debian's libsentencepiece (see sentencepiece_model.h
// for why it is loaded apart): a C interface over SentencePieceProcessor.
// Built as a shared module; only sentencepiece_model.cc calls it, through
// dlopen.
#include <sentencepiece_processor.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace {

void CopyError(const std::string& message, char* error, size_t error_size) {
  if (error == nullptr || error_size == 0) return;
  const size_t n = std::min(message.size(), error_size - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

}  // namespace

extern "C" {

// A processor loaded from a serialized ModelProto, or null with the reason
// in `error`.
__attribute__((visibility("default"))) void* bertology_spm_load(
    const char* data, size_t size, char* error, size_t error_size) {
  auto* processor = new sentencepiece::SentencePieceProcessor();
  const auto status =
      processor->LoadFromSerializedProto(std::string(data, size));
  if (!status.ok() || processor->GetPieceSize() <= 0) {
    CopyError(status.ok() ? "no pieces" : status.ToString(), error, error_size);
    delete processor;
    return nullptr;
  }
  return processor;
}

__attribute__((visibility("default"))) void bertology_spm_free(void* model) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(model);
}

__attribute__((visibility("default"))) int bertology_spm_size(
    const void* model) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(model)
      ->GetPieceSize();
}

__attribute__((visibility("default"))) int bertology_spm_unk_id(
    const void* model) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(model)
      ->unk_id();
}

// Calls `emit` once per piece of `text`, in order.
__attribute__((visibility("default"))) void bertology_spm_encode(
    const void* model, const char* text, size_t size,
    void (*emit)(void* context, int id, const char* piece, size_t piece_size,
                 int begin, int end),
    void* context) {
  const auto spt =
      static_cast<const sentencepiece::SentencePieceProcessor*>(model)
          ->EncodeAsImmutableProto(std::string(text, size));
  for (const auto& sp : spt.pieces()) {
    emit(context, static_cast<int>(sp.id()), sp.piece().data(),
         sp.piece().size(), static_cast<int>(sp.begin()),
         static_cast<int>(sp.end()));
  }
}

}  // extern "C"
