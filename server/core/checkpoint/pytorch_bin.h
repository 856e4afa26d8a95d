// Internals of ReadPytorchBin (declared in state_dict.h) exposed for tests:
// how the torch-specific parts of a torch.save pickle are interpreted.
#ifndef BERTOLOGY_CORE_PYTORCH_BIN_H_
#define BERTOLOGY_CORE_PYTORCH_BIN_H_

#include <torch/types.h>

#include <optional>
#include <string>

namespace bertology {

// The dtype of a legacy typed storage class named by its qualified name,
// e.g. "torch.FloatStorage" -> kFloat; nullopt for anything else.
std::optional<torch::ScalarType> StorageDtype(const std::string& global);

// What a file starts with, decided from its first bytes.
enum class TorchFileKind { kZip, kLegacyPickle, kUnknown };
TorchFileKind SniffTorchFile(const std::string& first_bytes);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PYTORCH_BIN_H_
