// The tokenizer tests' goldens: paths under the source tree and JSON Lines
// files (one case per line, written by the tests/golden/make_*.py scripts).
// Tests only.
#ifndef BERTOLOGY_CORE_TOKENIZER_GOLDEN_FILES_FOR_TESTS_H_
#define BERTOLOGY_CORE_TOKENIZER_GOLDEN_FILES_FOR_TESTS_H_

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace bertology::testing {

// `relative` under BERTOLOGY_SOURCE_DIR (ctest sets it), else as given.
inline std::string SourcePath(const std::string& relative) {
  const char* dir = std::getenv("BERTOLOGY_SOURCE_DIR");
  return dir == nullptr ? relative : std::string(dir) + "/" + relative;
}

// Every non-empty line of `path` parsed; a test failure when unreadable.
inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<nlohmann::json> cases;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) cases.push_back(nlohmann::json::parse(line));
  }
  return cases;
}

}  // namespace bertology::testing

#endif  // BERTOLOGY_CORE_TOKENIZER_GOLDEN_FILES_FOR_TESTS_H_
