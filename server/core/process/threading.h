// One place that sizes every compute thread pool the core uses on CPU.
//
// libtorch runs element-wise ops on its OpenMP pool but calls the system
// BLAS (OpenBLAS on Debian) for float32 GEMM, and OpenBLAS keeps a pthread
// pool of its own, sized to all cores and blind to at::set_num_threads.
// Both pools spin while waiting, so with both at the core count they take
// turns preempting each other (see bench/RESULTS.md for the measurement).
#ifndef BERTOLOGY_CORE_PROCESS_THREADING_H_
#define BERTOLOGY_CORE_PROCESS_THREADING_H_

#include <string>

namespace bertology {

struct ThreadSettings {
  int intra_op = 0;  // libtorch (OpenMP) intra-op threads; 0: leave
  int blas = 0;      // OpenBLAS pthreads; 0: leave, -1: not OpenBLAS
};

// Sets libtorch's intra-op pool to `intra_op` (when > 0), its inter-op pool
// to `inter_op` (when > 0; libtorch allows that once per process, so a
// later call keeps the first value) and OpenBLAS's pool, when OpenBLAS is
// the BLAS loaded (found with dlsym at run time, so any other BLAS is left
// alone), to `blas_threads` (when > 0). Returns what is in effect
// afterwards. Call once at start-up, before serving.
ThreadSettings ConfigureThreads(int intra_op, int blas_threads,
                                int inter_op = 0);

// CPUs this process may run on: its affinity mask, capped by a cgroup v2
// CPU quota (cpu.max, rounded up) when one is set, as in a container with a
// CPU limit; at least 1. std::thread::hardware_concurrency counts the
// machine's cores instead.
int UsableCpus();
// `cpus` capped by the quota in `cpu_max` (the text of cgroup v2's cpu.max:
// "max PERIOD" or "QUOTA PERIOD", microseconds), rounded up; unchanged when
// there is no quota or the text does not parse.
int CapByCpuQuota(int cpus, const std::string& cpu_max);

// For a worker thread of a parallel run (e.g. the sweep's): makes libtorch's
// intra-op work started from *this* thread single-threaded, leaving every
// other thread as it was (OpenMP keeps the pool width per calling thread).
void UseOneIntraOpThreadOnThisThread();

// While at least one instance lives, OpenBLAS runs every GEMM on the thread
// that calls it (pool size 1); when the last one is destroyed the size in
// effect before the first is restored. OpenBLAS has one process-wide pool
// whose calls from several threads at once serialise on a lock, so workers
// that run GEMMs side by side need it single-threaded. Other callers (e.g.
// Classify beside a parallel sweep) run single-threaded meanwhile; the
// sweep's workers already use the cores. Thread-safe; no-op when the BLAS
// is not OpenBLAS.
class SingleThreadedBlasScope {
 public:
  SingleThreadedBlasScope();
  ~SingleThreadedBlasScope();
  SingleThreadedBlasScope(const SingleThreadedBlasScope&) = delete;
  SingleThreadedBlasScope& operator=(const SingleThreadedBlasScope&) = delete;
};

}  // namespace bertology

#endif  // BERTOLOGY_CORE_PROCESS_THREADING_H_
