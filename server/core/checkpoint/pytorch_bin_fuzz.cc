// libFuzzer target: pytorch_model.bin (ReadPytorchBin): libtorch's zip
// reader, then our unpickler of data.pkl with the storage and tensor hooks.
#include <cstdint>

#include "server/core/checkpoint/state_dict.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bertology::FuzzFile file("-pytorch_model.bin");
  (void)bertology::ReadPytorchBin(file.Write(data, size));
  return 0;
}
