#include "server/core/tokenizer/sentencepiece_model.h"

#include <sentencepiece_processor.h>

namespace bertology {

SentencePieceModel::SentencePieceModel()
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceModel::~SentencePieceModel() = default;

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(
    const std::string& serialized, std::string* error) {
  std::unique_ptr<SentencePieceModel> model(new SentencePieceModel());
  const auto status = model->processor_->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  if (model->processor_->GetPieceSize() <= 0) {
    *error = "no pieces";
    return nullptr;
  }
  return model;
}

std::vector<SentencePiece> SentencePieceModel::Encode(
    std::string_view text) const {
  const auto spt = processor_->EncodeAsImmutableProto(text);
  std::vector<SentencePiece> out;
  out.reserve(spt.pieces_size());
  for (const auto& sp : spt.pieces()) {
    out.push_back({static_cast<int>(sp.id()), sp.piece(),
                   static_cast<int>(sp.begin()), static_cast<int>(sp.end())});
  }
  return out;
}

int SentencePieceModel::size() const { return processor_->GetPieceSize(); }

int SentencePieceModel::unk_id() const { return processor_->unk_id(); }

}  // namespace bertology
