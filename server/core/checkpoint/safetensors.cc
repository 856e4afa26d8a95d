// Reader and writer for the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON mapping each tensor name to
// {dtype, shape, data_offsets: [begin, end)} relative to the data section,
// then the data section. An optional "__metadata__" entry maps strings to
// strings and is ignored here.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "server/core/checkpoint/state_dict.h"

namespace bertology {
namespace {

using Json = nlohmann::json;

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  int64_t itemsize;
};

constexpr DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat, 4},     {"F16", torch::kHalf, 2},
    {"BF16", torch::kBFloat16, 2}, {"F64", torch::kDouble, 8},
    {"I64", torch::kLong, 8},      {"I32", torch::kInt, 4},
    {"I16", torch::kShort, 2},     {"I8", torch::kChar, 1},
    {"U8", torch::kByte, 1},       {"BOOL", torch::kBool, 1},
};

const DtypeInfo* FindDtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo* FindDtype(torch::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// One header entry, validated against the data section size.
struct Entry {
  const DtypeInfo* dtype;
  std::vector<int64_t> shape;
  int64_t begin;
  int64_t end;
};

absl::StatusOr<Entry> ParseEntry(const std::string& path,
                                 const std::string& name, const Json& v,
                                 int64_t data_size) {
  if (!v.is_object()) {
    return Corrupt(path, absl::StrCat("tensor ", name, " is not an object"));
  }
  auto dt = v.find("dtype");
  auto sh = v.find("shape");
  auto off = v.find("data_offsets");
  if (dt == v.end() || !dt->is_string() || sh == v.end() || !sh->is_array() ||
      off == v.end() || !off->is_array() || off->size() != 2) {
    return Corrupt(path,
                   absl::StrCat("tensor ", name,
                                " needs dtype, shape and 2 data_offsets"));
  }
  Entry e;
  e.dtype = FindDtype(dt->get<std::string>());
  if (e.dtype == nullptr) {
    return Corrupt(path, absl::StrCat("tensor ", name, " has unknown dtype ",
                                      dt->get<std::string>()));
  }
  int64_t numel = 1;
  for (const auto& d : *sh) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return Corrupt(
          path, absl::StrCat("tensor ", name,
                             " has a negative or non-integer dim ", d.dump()));
    }
    const int64_t dim = d.get<int64_t>();
    if (dim != 0 && numel > std::numeric_limits<int64_t>::max() / 16 / dim) {
      return Corrupt(path, absl::StrCat("tensor ", name, " shape overflows"));
    }
    numel *= dim;
    e.shape.push_back(dim);
  }
  for (const auto& o : *off) {
    if (!o.is_number_integer() || o.get<int64_t>() < 0) {
      return Corrupt(path,
                     absl::StrCat("tensor ", name, " has invalid data_offsets ",
                                  off->dump()));
    }
  }
  e.begin = (*off)[0].get<int64_t>();
  e.end = (*off)[1].get<int64_t>();
  if (e.begin > e.end || e.end > data_size) {
    return Corrupt(
        path, absl::StrCat("tensor ", name, " data_offsets [", e.begin, ", ",
                           e.end, "] fall outside the data section of ",
                           data_size, " bytes"));
  }
  const int64_t expected = numel * e.dtype->itemsize;
  if (e.end - e.begin != expected) {
    return Corrupt(
        path, absl::StrCat("header lies about sizes: tensor ", name,
                           " of dtype ", e.dtype->name, " and shape [",
                           absl::StrJoin(e.shape, ", "), "] needs ", expected,
                           " bytes but data_offsets give ", e.end - e.begin));
  }
  return e;
}

}  // namespace

std::string DtypeName(torch::ScalarType type) {
  const DtypeInfo* d = FindDtype(type);
  return d == nullptr ? std::string(c10::toString(type)) : d->name;
}

absl::StatusOr<StateDict> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const int64_t file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) {
    return Corrupt(path, absl::StrCat("file too short (", file_size,
                                      " bytes) for the 8-byte header length"));
  }
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > static_cast<uint64_t>(file_size - 8)) {
    return Corrupt(path, absl::StrCat("header length ", header_len,
                                      " runs past the end of the file (",
                                      file_size, " bytes)"));
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) {
    return Corrupt(path, "cannot read the JSON header");
  }
  const Json j = Json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Corrupt(path, "header is not a JSON object");
  }
  const int64_t data_start = 8 + static_cast<int64_t>(header_len);
  const int64_t data_size = file_size - data_start;
  StateDict out;
  try {
    for (const auto& [name, v] : j.items()) {
      if (name == "__metadata__") continue;
      auto entry = ParseEntry(path, name, v, data_size);
      if (!entry.ok()) return entry.status();
      // Read straight into the tensor's storage: no second copy of the file.
      torch::Tensor t = torch::empty(
          entry->shape, torch::TensorOptions().dtype(entry->dtype->type));
      const int64_t nbytes = entry->end - entry->begin;
      if (nbytes > 0) {
        in.seekg(data_start + entry->begin);
        if (!in.read(static_cast<char*>(t.data_ptr()), nbytes)) {
          return Corrupt(path, absl::StrCat("short read for tensor ", name));
        }
      }
      out.emplace(name, std::move(t));
    }
  } catch (const std::exception& e) {  // c10::Error, bad_alloc
    return absl::InternalError(absl::StrCat(path, ": ", e.what()));
  }
  return out;
}

absl::Status WriteSafetensors(const StateDict& tensors,
                              const std::string& path) {
  Json header = Json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<torch::Tensor> ordered;
  int64_t offset = 0;
  try {
    for (const auto& [name, tensor] : tensors) {  // std::map: sorted keys
      const DtypeInfo* d = FindDtype(tensor.scalar_type());
      if (d == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": tensor ", name, " has unsupported dtype ",
                         c10::toString(tensor.scalar_type())));
      }
      torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
      const int64_t nbytes = t.numel() * d->itemsize;
      header[name] = {{"dtype", d->name},
                      {"shape", t.sizes().vec()},
                      {"data_offsets", {offset, offset + nbytes}}};
      offset += nbytes;
      ordered.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(path, ": ", e.what()));
  }
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned (as the
  // reference writer does); JSON ignores trailing whitespace.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::PermissionDeniedError(path + ": cannot open for write");
  uint64_t n = text.size();
  char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>(n >> (8 * i));
  out.write(len_bytes, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : ordered) {
    out.write(static_cast<const char*>(t.data_ptr()),
              static_cast<std::streamsize>(t.numel() * t.element_size()));
  }
  if (!out.flush()) return absl::DataLossError(path + ": write failed");
  return absl::OkStatus();
}

}  // namespace bertology
