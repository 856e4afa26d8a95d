// ReadPytorchBin: torch.save's zip archive (PyTorch >= 1.6) holds
// `<name>/data.pkl`, a pickle of the state dict in which each storage is a
// persistent id ('storage', torch.XStorage, key, location, numel) whose
// bytes are the record `<name>/data/<key>`, and each tensor is
// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
// Only that subset is accepted; any other callable is refused by name, so a
// checkpoint can never run code here.
#include "server/core/checkpoint/pytorch_bin.h"

#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/core/checkpoint/pickle.h"
#include "server/core/checkpoint/state_dict.h"

namespace bertology {

std::optional<torch::ScalarType> StorageDtype(const std::string& global) {
  static const std::map<std::string, torch::ScalarType> kTypes = {
      {"torch.FloatStorage", torch::kFloat},
      {"torch.HalfStorage", torch::kHalf},
      {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.DoubleStorage", torch::kDouble},
      {"torch.LongStorage", torch::kLong},
      {"torch.IntStorage", torch::kInt},
      {"torch.ShortStorage", torch::kShort},
      {"torch.CharStorage", torch::kChar},
      {"torch.ByteStorage", torch::kByte},
      {"torch.BoolStorage", torch::kBool},
  };
  auto it = kTypes.find(global);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

TorchFileKind SniffTorchFile(const std::string& first_bytes) {
  if (first_bytes.size() >= 2 && first_bytes[0] == 'P' &&
      first_bytes[1] == 'K') {
    return TorchFileKind::kZip;
  }
  if (!first_bytes.empty() &&
      static_cast<unsigned char>(first_bytes[0]) == 0x80) {
    return TorchFileKind::kLegacyPickle;
  }
  return TorchFileKind::kUnknown;
}

namespace {

using K = PickleValue::Kind;
using caffe2::serialize::PyTorchStreamReader;

// Interprets the torch parts of the pickle. Storages are cached by key so
// tensors sharing a storage (tied weights) share it here too.
class TorchUnpickler {
 public:
  TorchUnpickler(PyTorchStreamReader* reader, const std::string& path)
      : reader_(reader), path_(path) {}

  absl::StatusOr<PickleValue> PersistentLoad(const PickleValue& pid);
  absl::StatusOr<PickleValue> Reduce(const PickleValue& fn,
                                     const PickleValue& args);

 private:
  absl::Status Bad(const std::string& what) const {
    return absl::DataLossError(absl::StrCat(path_, ": ", what));
  }
  absl::StatusOr<PickleValue> RebuildTensor(const std::vector<PickleValue>& a);

  PyTorchStreamReader* reader_;
  const std::string& path_;
  std::map<std::string, torch::Tensor> storages_;
};

absl::StatusOr<PickleValue> TorchUnpickler::PersistentLoad(
    const PickleValue& pid) {
  if (!pid.is(K::kTuple) || pid.items->size() != 5 ||
      !(*pid.items)[0].is(K::kString) || (*pid.items)[0].str != "storage") {
    return Bad("unsupported persistent id " + pid.DebugString());
  }
  const auto& t = *pid.items;
  if (!t[1].is(K::kGlobal) || !t[2].is(K::kString) || !t[4].is(K::kInt)) {
    return Bad("malformed storage id " + pid.DebugString());
  }
  const std::optional<torch::ScalarType> dtype = StorageDtype(t[1].str);
  if (!dtype) return Bad("unsupported storage type " + t[1].str);
  const std::string& key = t[2].str;
  auto cached = storages_.find(key);
  PickleValue out;
  out.kind = K::kStorage;
  if (cached != storages_.end()) {
    out.tensor = cached->second;
    return out;
  }
  const std::string record = "data/" + key;
  if (!reader_->hasRecord(record)) {
    return Bad(absl::StrCat("archive has no record ", record));
  }
  auto [data, nbytes] = reader_->getRecord(record);
  const int64_t numel = t[4].i;
  const int64_t itemsize = c10::elementSize(*dtype);
  if (numel < 0 || static_cast<int64_t>(nbytes) < numel * itemsize) {
    return Bad(absl::StrCat("record ", record, " holds ", nbytes,
                            " bytes, storage needs ", numel, " x ", itemsize));
  }
  torch::Tensor storage =
      torch::empty({numel}, torch::TensorOptions().dtype(*dtype));
  if (numel > 0) std::memcpy(storage.data_ptr(), data.get(), numel * itemsize);
  storages_.emplace(key, storage);
  out.tensor = storage;
  return out;
}

absl::StatusOr<std::vector<int64_t>> IntTuple(const PickleValue& v) {
  if (!v.is(K::kTuple)) return absl::InvalidArgumentError("not a tuple");
  std::vector<int64_t> out;
  for (const auto& x : *v.items) {
    if (!x.is(K::kInt)) return absl::InvalidArgumentError("not an int");
    out.push_back(x.i);
  }
  return out;
}

absl::StatusOr<PickleValue> TorchUnpickler::RebuildTensor(
    const std::vector<PickleValue>& a) {
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks
  //  [, metadata])
  if (a.size() < 4 || !a[0].is(K::kStorage) || !a[1].is(K::kInt)) {
    return Bad("malformed _rebuild_tensor_v2 arguments");
  }
  auto size = IntTuple(a[2]);
  auto stride = IntTuple(a[3]);
  if (!size.ok() || !stride.ok() || size->size() != stride->size()) {
    return Bad("malformed _rebuild_tensor_v2 size/stride");
  }
  const int64_t offset = a[1].i;
  int64_t last = offset;  // highest element index touched
  bool empty = false;
  for (size_t d = 0; d < size->size(); ++d) {
    if ((*size)[d] < 0 || (*stride)[d] < 0) return Bad("negative size/stride");
    if ((*size)[d] == 0) empty = true;
    last += ((*size)[d] - 1) * (*stride)[d];
  }
  const torch::Tensor& storage = a[0].tensor;
  if (offset < 0 || (!empty && last >= storage.numel())) {
    return Bad(absl::StrCat("tensor view past its storage of ", storage.numel(),
                            " elements"));
  }
  PickleValue out;
  out.kind = K::kTensor;
  out.tensor = storage.as_strided(*size, *stride, offset);
  return out;
}

absl::StatusOr<PickleValue> TorchUnpickler::Reduce(const PickleValue& fn,
                                                   const PickleValue& args) {
  const std::string name = fn.is(K::kGlobal) ? fn.str : fn.DebugString();
  const auto& a = *args.items;
  if (name == "collections.OrderedDict" && a.empty()) {
    PickleValue d;
    d.kind = K::kDict;
    d.dict =
        std::make_shared<std::vector<std::pair<PickleValue, PickleValue>>>();
    return d;
  }
  if (name == "torch._utils._rebuild_tensor_v2") return RebuildTensor(a);
  if (name == "torch._utils._rebuild_parameter" && !a.empty() &&
      a[0].is(K::kTensor)) {
    return a[0];
  }
  return absl::UnimplementedError(
      absl::StrCat(path_, ": unsupported pickle global ", name,
                   " (only state dicts of plain tensors are read)"));
}

absl::StatusOr<StateDict> ReadZip(const std::string& path) {
  auto reader = std::make_unique<PyTorchStreamReader>(path);
  if (reader->hasRecord("byteorder")) {
    auto [data, n] = reader->getRecord("byteorder");
    if (std::string(static_cast<const char*>(data.get()), n) != "little") {
      return absl::UnimplementedError(path + ": big-endian archive");
    }
  }
  if (!reader->hasRecord("data.pkl")) {
    return absl::DataLossError(path + ": archive has no data.pkl");
  }
  auto [pkl, pkl_size] = reader->getRecord("data.pkl");
  TorchUnpickler torch_hooks(reader.get(), path);
  PickleHooks hooks;
  hooks.persistent_load = [&](const PickleValue& pid) {
    return torch_hooks.PersistentLoad(pid);
  };
  hooks.reduce = [&](const PickleValue& fn, const PickleValue& args) {
    return torch_hooks.Reduce(fn, args);
  };
  auto top =
      Unpickle(std::string_view(static_cast<const char*>(pkl.get()), pkl_size),
               hooks, path + " (data.pkl)");
  if (!top.ok()) return top.status();
  if (!top->is(K::kDict)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": top-level object is not a dict but ", top->DebugString()));
  }
  StateDict out;
  for (const auto& [key, value] : *top->dict) {
    // Non-tensor entries (step counters, nested config) are not weights.
    if (!key.is(K::kString) || !value.is(K::kTensor)) continue;
    out[key.str] = value.tensor;
  }
  return out;
}

}  // namespace

absl::StatusOr<StateDict> ReadPytorchBin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  std::string head(4, '\0');
  in.read(head.data(), 4);
  head.resize(in.gcount());
  switch (SniffTorchFile(head)) {
    case TorchFileKind::kZip:
      break;
    case TorchFileKind::kLegacyPickle:
      // Refused, not read: the legacy layout is a second file format (five
      // pickles, storages keyed by the pickle's persistent ids, raw data
      // after them) for files any PyTorch >= 1.6 converts in one line, and
      // every checkpoint HF has written since 2020 is zip or safetensors.
      return absl::UnimplementedError(absl::StrCat(
          path,
          ": legacy (pre-1.6, non-zip) torch.save format is not supported; "
          "convert it in place with PyTorch >= 1.6: python3 -c \"import "
          "torch; p='",
          path, "'; torch.save(torch.load(p, map_location='cpu'), p)\""));
    case TorchFileKind::kUnknown:
      return absl::DataLossError(absl::StrCat(
          path, ": not a torch.save zip archive (no PK signature)"));
  }
  try {
    return ReadZip(path);
  } catch (const std::exception& e) {  // c10::Error from the zip reader
    return absl::DataLossError(
        absl::StrCat(path, ": cannot read torch.save archive: ", e.what()));
  }
}

}  // namespace bertology
