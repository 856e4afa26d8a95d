// libFuzzer target: tokenizer_config.json (ReadTokenizerConfig).
#include <cstdint>

#include "server/core/tokenizer/tokenizer_config.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bertology::FuzzFile file("-tokenizer_config.json");
  (void)bertology::ReadTokenizerConfig(file.Write(data, size));
  return 0;
}
