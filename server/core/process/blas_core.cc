#include "server/core/process/blas_core.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace bertology {
namespace {

uint64_t Xgetbv() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

}  // namespace

std::string OpenBlasCoreName() {
  using CoreNameFn = char* (*)();
  auto fn = reinterpret_cast<CoreNameFn>(
      dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (fn == nullptr) return "";
  const char* name = fn();
  return name == nullptr ? "" : name;
}

CpuVector DetectCpuVector() {
  CpuVector v;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return v;
  const bool osxsave = (c & bit_OSXSAVE) != 0;
  const bool fma = (c & bit_FMA) != 0;
  const bool avx = (c & bit_AVX) != 0;
  if (!osxsave || !avx) return v;
  const uint64_t xcr0 = Xgetbv();
  const bool ymm = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm = (xcr0 & 0xe6) == 0xe6;  // plus opmask, ZMM hi
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return v;
  v.avx2_fma = ymm && fma && (b & bit_AVX2) != 0;
  const unsigned need =
      bit_AVX512F | bit_AVX512BW | bit_AVX512VL | bit_AVX512DQ;
  v.avx512 = v.avx2_fma && zmm && (b & need) == need;
  return v;
}

std::string OpenBlasCoreFix(const std::string& detected, const CpuVector& cpu) {
  if (detected != "Prescott") return "";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

void ReexecWithFixedOpenBlasCore(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr ||
      std::getenv("BERTOLOGY_NO_BLAS_FIX") != nullptr) {
    return;
  }
  const std::string detected = OpenBlasCoreName();
  const std::string fix = OpenBlasCoreFix(detected, DetectCpuVector());
  if (fix.empty()) return;
  std::cerr << "OpenBLAS chose its " << detected << " (SSE3) kernels on a CPU "
            << "with " << (fix == "SkylakeX" ? "AVX-512" : "AVX2")
            << " (OpenBLAS issue #4267): running again with "
            << "OPENBLAS_CORETYPE=" << fix
            << " (set BERTOLOGY_NO_BLAS_FIX=1 to keep " << detected << ")"
            << std::endl;
  if (setenv("OPENBLAS_CORETYPE", fix.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only reached when the exec failed: go on, slowly.
  std::cerr << "exec /proc/self/exe failed (" << std::strerror(errno)
            << "): keeping OpenBLAS's " << detected << " kernels" << std::endl;
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace bertology
