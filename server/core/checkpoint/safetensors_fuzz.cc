// libFuzzer target: model.safetensors (ReadSafetensors): the 8-byte header
// length, the JSON header and its offsets against the data section.
#include <cstdint>

#include "server/core/checkpoint/state_dict.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bertology::FuzzFile file("-model.safetensors");
  (void)bertology::ReadSafetensors(file.Write(data, size));
  return 0;
}
