// OpenBLAS's kernel choice, and the one fix for its misdetection.
//
// Debian 12's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels from cpuid
// when it loads, and on Intel CPUs its runtime detection does not know it
// falls back hard to "Prescott", its SSE3 kernels (OpenBLAS issue #4267,
// fixed in 0.3.25). On a Sapphire Rapids VM here that made every float32
// GEMM 4-5x slower than the AVX-512 kernels the same library holds
// (bench/RESULTS.md). OpenBLAS reads OPENBLAS_CORETYPE only while it loads,
// before main() runs, so the fix is to set it and exec the program again.
#ifndef BERTOLOGY_CORE_PROCESS_BLAS_CORE_H_
#define BERTOLOGY_CORE_PROCESS_BLAS_CORE_H_

#include <string>

namespace bertology {

// The kernel set OpenBLAS runs ("Prescott", "Haswell", "SkylakeX", ...);
// empty when the BLAS loaded is not OpenBLAS (found with dlsym).
std::string OpenBlasCoreName();

// What this CPU and OS can run, from cpuid and xgetbv.
struct CpuVector {
  bool avx2_fma = false;  // AVX2 and FMA, YMM state enabled by the OS
  bool avx512 = false;    // AVX-512 F, BW, VL, DQ, ZMM state enabled
};
CpuVector DetectCpuVector();

// The OPENBLAS_CORETYPE to force, or "" to leave OpenBLAS's choice: only
// when it chose Prescott although the CPU runs AVX2 ("Haswell") or AVX-512
// ("SkylakeX"). Pure; tested on its own.
std::string OpenBlasCoreFix(const std::string& detected, const CpuVector& cpu);

// Call first in main(). Where OpenBlasCoreFix names a core and neither
// OPENBLAS_CORETYPE nor BERTOLOGY_NO_BLAS_FIX is set, sets
// OPENBLAS_CORETYPE, prints one line to stderr saying why, and execs
// /proc/self/exe with `argv` (same PID, fds and arguments): it returns only
// when nothing needed fixing or the exec failed (then it says so and the
// program goes on with the slow kernels).
void ReexecWithFixedOpenBlasCore(char** argv);

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PROCESS_BLAS_CORE_H_
