// libFuzzer target: config.json (BertConfig::FromJson), and the JSON a
// parsed config writes back, which must parse to the same config.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/core/checkpoint/bert_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = bertology::BertConfig::FromJson(text, "fuzz/config.json");
  if (!config.ok()) return 0;
  (void)config->head_size();
  (void)config->num_heads_total();
  const std::string json = config->ToJson();
  auto again = bertology::BertConfig::FromJson(json, "fuzz/written.json");
  if (!again.ok() || again->ToJson() != json) std::abort();
  return 0;
}
