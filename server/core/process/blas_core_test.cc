#include "server/core/process/blas_core.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace bertology {
namespace {

TEST(BlasCoreTest, FixesOnlyTheHardFallbackToPrescott) {
  const CpuVector none, avx2{true, false}, avx512{true, true};
  EXPECT_EQ(OpenBlasCoreFix("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreFix("Prescott", avx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreFix("Prescott", none), "");   // Prescott is right
  EXPECT_EQ(OpenBlasCoreFix("Haswell", avx512), "");  // OpenBLAS's choice
  EXPECT_EQ(OpenBlasCoreFix("Zen", avx2), "");
  EXPECT_EQ(OpenBlasCoreFix("", avx512), "");  // not OpenBLAS
}

TEST(BlasCoreTest, DetectsWhatTheCpuFlagsSay) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&](const std::string& f) {
    return flags.find(" " + f + " ") != std::string::npos;
  };
  const CpuVector v = DetectCpuVector();
  EXPECT_EQ(v.avx2_fma, has("avx2") && has("fma"));
  EXPECT_EQ(v.avx512, v.avx2_fma && has("avx512f") && has("avx512bw") &&
                          has("avx512vl") && has("avx512dq"));
}

// Run in a child by the next test: writes the kernel set in use.
TEST(BlasCoreTest, ChildWritesItsCore) {
  const char* out = std::getenv("BERTOLOGY_BLAS_CORE_OUT");
  if (out == nullptr) GTEST_SKIP() << "run by ReexecsWithTheFixedCore";
  std::ofstream(out) << OpenBlasCoreName();
}

// The real mechanism: a child calls ReexecWithFixedOpenBlasCore; where this
// machine's OpenBLAS fell back to Prescott it must come back as the fixed
// core (a fresh load of OpenBLAS under OPENBLAS_CORETYPE), else return.
TEST(BlasCoreTest, ReexecsWithTheFixedCore) {
  const bool forced = std::getenv("OPENBLAS_CORETYPE") != nullptr ||
                      std::getenv("BERTOLOGY_NO_BLAS_FIX") != nullptr;
  const std::string detected = OpenBlasCoreName();
  const std::string fix =
      forced ? "" : OpenBlasCoreFix(detected, DetectCpuVector());
  const std::string out = ::testing::TempDir() + "/blas_core_child.txt";
  std::remove(out.c_str());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("BERTOLOGY_BLAS_CORE_OUT", out.c_str(), 1);
    std::string filter = "--gtest_filter=BlasCoreTest.ChildWritesItsCore";
    char* argv[] = {const_cast<char*>("blas_core_test"), filter.data(),
                    nullptr};
    ReexecWithFixedOpenBlasCore(argv);
    _exit(3);  // nothing to fix (or the exec failed)
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  std::cout << "OpenBLAS here: " << (detected.empty() ? "(none)" : detected)
            << "; fix: " << (fix.empty() ? "(none)" : fix) << "\n";
  if (fix.empty()) {
    EXPECT_EQ(WEXITSTATUS(status), 3);
    return;
  }
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::ifstream in(out);
  std::stringstream core;
  core << in.rdbuf();
  EXPECT_EQ(core.str(), fix);
}

}  // namespace
}  // namespace bertology
