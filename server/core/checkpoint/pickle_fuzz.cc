// libFuzzer target: the unpickler alone (Unpickle), on raw pickle programs
// (no zip around them, so the mutations reach every opcode). The hooks
// return a value for half the persistent ids and REDUCE calls and an error
// for the rest, so both paths run; the result is rendered as an error
// message would be.
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "server/core/checkpoint/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using bertology::PickleValue;
  bertology::PickleHooks hooks;
  hooks.persistent_load =
      [](const PickleValue& pid) -> absl::StatusOr<PickleValue> {
    if (pid.is(PickleValue::Kind::kString)) return PickleValue::Int(1);
    return absl::DataLossError("unsupported persistent id");
  };
  hooks.reduce = [](const PickleValue& fn,
                    const PickleValue& args) -> absl::StatusOr<PickleValue> {
    if (fn.is(PickleValue::Kind::kGlobal)) return args;
    return absl::UnimplementedError("unsupported global");
  };
  auto value = bertology::Unpickle(
      std::string_view(reinterpret_cast<const char*>(data), size), hooks,
      "fuzz.pkl");
  if (value.ok()) (void)value->DebugString();
  return 0;
}
