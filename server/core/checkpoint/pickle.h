// A minimal unpickler for the subset of the Python pickle format that
// `torch.save` writes for a state dict (protocol 2, plus the few protocol
// 3/4 opcodes newer Pythons emit for the same objects).
//
// It knows no Python classes: GLOBAL/STACK_GLOBAL, BINPERSID and REDUCE are
// handed to caller-supplied hooks, so the torch-specific meaning (storages,
// _rebuild_tensor_v2) lives in pytorch_bin.cc and this file stays a plain
// pickle VM that can be tested with bytes from Python's own `pickle`.
#ifndef BERTOLOGY_CORE_PICKLE_H_
#define BERTOLOGY_CORE_PICKLE_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace bertology {

// A Python value as far as a state dict needs. Lists and dicts are shared
// (memo entries alias the object on the stack, as in Python), so copying a
// PickleValue copies a reference, not the container.
struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,  // str and bytes
    kTuple,
    kList,
    kDict,
    kGlobal,   // a class or function reference: `str` is "module.name"
    kTensor,   // produced by hooks
    kStorage,  // produced by hooks: `tensor` is the flat storage
  };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string str;
  std::shared_ptr<std::vector<PickleValue>> items;  // tuple, list
  std::shared_ptr<std::vector<std::pair<PickleValue, PickleValue>>> dict;
  torch::Tensor tensor;

  static PickleValue None() { return {}; }
  static PickleValue Int(int64_t v);
  static PickleValue String(std::string v);
  static PickleValue Global(std::string qualified_name);

  bool is(Kind k) const { return kind == k; }
  // Short Python-like rendering for error messages (at most 64 values;
  // dicts as their size).
  std::string DebugString() const;
  // This value alone: a container as its kind and size.
  std::string ScalarString() const;
};

// Limits of the object graph a pickle may build (see CheckNesting in
// pickle.cc): nesting depth, and values visited by the checks that keep
// the graph acyclic.
inline constexpr int kMaxPickleDepth = 256;
inline constexpr int64_t kMaxPickleVisits = int64_t{1} << 20;

// What the unpickler asks the caller. Unset hooks make the matching opcode
// an error. A hook's error is returned as is, so it should name the file.
struct PickleHooks {
  // BINPERSID: turn a persistent id into a value.
  std::function<absl::StatusOr<PickleValue>(const PickleValue& pid)>
      persistent_load;
  // REDUCE: call `callable` (usually a kGlobal) with the tuple `args`.
  std::function<absl::StatusOr<PickleValue>(const PickleValue& callable,
                                            const PickleValue& args)>
      reduce;
};

// Runs the pickle program in `data` to STOP and returns the top value.
// Malformed input (unknown opcode, truncation, stack underflow, bad memo
// index) is an error naming `source` and the byte offset.
absl::StatusOr<PickleValue> Unpickle(std::string_view data,
                                     const PickleHooks& hooks,
                                     const std::string& source);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PICKLE_H_
