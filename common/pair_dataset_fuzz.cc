// libFuzzer target: the labelled-pair dataset reader (ReadPairDataset)
// behind the CLI's --data (client/cli/labeled_data.cc) and the trainer's
// files (server/train/train_data.cc). Byte 0 picks the format and the
// column and header options; the rest is the file.
#include <cstdint>
#include <cstdlib>

#include "common/pair_dataset.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using Options = bertology::PairDatasetOptions;
  static bertology::FuzzFile tsv(".tsv"), csv(".csv"), jsonl(".jsonl");
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  Options options;
  bertology::FuzzFile* file = &tsv;
  switch (flags & 3) {
    case 0:
      options.format = Options::Format::kAuto;
      break;
    case 1:
      options.format = Options::Format::kTsv;
      break;
    case 2:
      options.format = Options::Format::kCsv;
      file = &csv;
      break;
    case 3:
      options.format = Options::Format::kJsonl;
      file = &jsonl;
      break;
  }
  if (flags & 4) {  // by name, as a header or JSON keys give them
    options.text_a = "sentence1";
    options.text_b = (flags & 8) ? "" : "sentence2";
    options.label = "label";
  } else if (flags & 8) {
    options.text_b = "";
    options.label = "1";
  }
  options.header = (flags & 16)   ? Options::Header::kYes
                   : (flags & 32) ? Options::Header::kNo
                                  : Options::Header::kAuto;
  if (flags & 64) options.limit = 3;
  auto rows =
      bertology::ReadPairDataset(file->Write(data + 1, size - 1), options);
  if (rows.ok() && options.limit > 0 &&
      static_cast<int>(rows->size()) > options.limit) {
    std::abort();
  }
  return 0;
}
