// Readers for the two HF weight formats. Both return tensors keyed by the
// names stored in the file, on CPU, in the file's dtype.
#ifndef BERTOLOGY_CORE_STATE_DICT_H_
#define BERTOLOGY_CORE_STATE_DICT_H_

#include <torch/types.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace bertology {

using StateDict = std::map<std::string, torch::Tensor>;

// `model.safetensors`: 8-byte little-endian header length, JSON header,
// raw data. Supports F32, F16, BF16 (and F64, I64, I32 for buffers).
// Every inconsistency (truncated file, offsets past the end, size not
// matching shape*dtype, unknown dtype) is an error naming `path`.
absl::StatusOr<StateDict> ReadSafetensors(const std::string& path);

// `pytorch_model.bin` in torch.save's zip format: reads the archive with
// libtorch's PyTorchStreamReader and unpickles the state-dict subset
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2, typed
// storages). The legacy pre-1.6 format is refused with how to convert it.
absl::StatusOr<StateDict> ReadPytorchBin(const std::string& path);

// Writes `model.safetensors` (used by the trainer and tests): keys sorted,
// tensors made contiguous on CPU, a {"format": "pt"} metadata entry.
absl::Status WriteSafetensors(const StateDict& tensors,
                              const std::string& path);

// The safetensors name of a dtype ("F32", "F16", "BF16", "I64", ...); the
// torch name for dtypes safetensors cannot hold.
std::string DtypeName(torch::ScalarType type);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_STATE_DICT_H_
