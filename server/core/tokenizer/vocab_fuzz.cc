// libFuzzer target: vocab.txt (Vocab::FromFile), then a tokenizer on the
// vocabulary it read, so a file that loads is also one that tokenizes.
#include <cstdint>
#include <cstdlib>

#include "server/core/tokenizer/bert_tokenizer.h"
#include "server/core/tokenizer/vocab.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bertology::FuzzFile file("-vocab.txt");
  auto vocab = bertology::Vocab::FromFile(file.Write(data, size));
  if (!vocab.ok()) return 0;
  for (int id = 0; id < vocab->size(); ++id) {
    if (vocab->Id(vocab->Token(id)) < 0) std::abort();
  }
  const bertology::BertTokenizer tokenizer(*std::move(vocab),
                                           bertology::TokenizerOptions{});
  (void)tokenizer.Encode("Hello, world! \xe4\xb8\xad\xe6\x96\x87 unaffable",
                         "[MASK] x", 16);
  return 0;
}
