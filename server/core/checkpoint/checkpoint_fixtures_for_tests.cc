#include "server/core/checkpoint/checkpoint_fixtures_for_tests.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"

namespace bertology {

std::string MakeCheckpointFixtures(std::string* why) {
  static std::string dir, reason;
  static bool done = false;
  if (!done) {
    done = true;
    const char* src = std::getenv("BERTOLOGY_SOURCE_DIR");
    const std::string script = std::string(src ? src : ".") +
                               "/tests/fixtures/make_checkpoint_fixtures.py";
    std::string tmpl = ::testing::TempDir() + "/ckptfx_XXXXXX";
    if (!std::filesystem::exists("/usr/bin/python3")) {
      reason = "/usr/bin/python3 not found";
    } else if (!std::filesystem::exists(script)) {
      reason = script + " not found (set BERTOLOGY_SOURCE_DIR)";
    } else if (mkdtemp(tmpl.data()) == nullptr) {
      reason = "mkdtemp failed";
    } else if (std::system(
                   ("/usr/bin/python3 " + script + " " + tmpl + " >/dev/null")
                       .c_str()) != 0) {
      reason = "fixture script failed (torch missing in /usr/bin/python3?)";
    } else {
      dir = tmpl;
    }
  }
  *why = reason;
  return dir;
}

}  // namespace bertology
