// Test-only, for the fuzz targets of readers that take a path: writes the
// fuzz input to one file per process (under $TMPDIR, else /tmp), rewritten
// for each input, and removed at exit.
#ifndef BERTOLOGY_TESTS_FUZZ_FUZZ_FILE_H_
#define BERTOLOGY_TESTS_FUZZ_FUZZ_FILE_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace bertology {

class FuzzFile {
 public:
  // `suffix` matters to readers that choose a format by extension.
  explicit FuzzFile(const std::string& suffix) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
            "/bertology-fuzz-" + std::to_string(getpid()) + suffix;
  }
  ~FuzzFile() { std::remove(path_.c_str()); }

  // Writes `data` and returns the path.
  const std::string& Write(const uint8_t* data, size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data),
              static_cast<std::streamsize>(size));
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace bertology

#endif  // BERTOLOGY_TESTS_FUZZ_FUZZ_FILE_H_
