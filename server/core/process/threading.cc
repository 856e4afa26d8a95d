#include "server/core/process/threading.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace bertology {
namespace {

using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

SetThreadsFn OpenBlasSetThreads() {
  return reinterpret_cast<SetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}
GetThreadsFn OpenBlasGetThreads() {
  return reinterpret_cast<GetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
}

std::mutex blas_scope_mu;
int blas_scopes = 0;         // guarded by blas_scope_mu
int blas_saved_threads = 0;  // guarded by blas_scope_mu

}  // namespace

void UseOneIntraOpThreadOnThisThread() {
  // libtorch sizes a thread's OpenMP pool once, lazily, from its global
  // setting; do that first so it does not overwrite ours later.
  at::internal::lazy_init_num_threads();
  // omp_set_num_threads sets the calling thread's ICV only. Looked up at run
  // time: libtorch brings the OpenMP runtime, this library does not link it.
  auto set_omp = reinterpret_cast<SetThreadsFn>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set_omp != nullptr) set_omp(1);
}

SingleThreadedBlasScope::SingleThreadedBlasScope() {
  std::lock_guard<std::mutex> lock(blas_scope_mu);
  if (blas_scopes++ > 0) return;
  auto set_blas = OpenBlasSetThreads();
  auto get_blas = OpenBlasGetThreads();
  if (set_blas == nullptr || get_blas == nullptr) return;
  blas_saved_threads = get_blas();
  set_blas(1);
}

SingleThreadedBlasScope::~SingleThreadedBlasScope() {
  std::lock_guard<std::mutex> lock(blas_scope_mu);
  if (--blas_scopes > 0) return;
  auto set_blas = OpenBlasSetThreads();
  if (set_blas != nullptr && blas_saved_threads > 0) {
    set_blas(blas_saved_threads);
  }
}

int CapByCpuQuota(int cpus, const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  int64_t period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return cpus;
  char* end = nullptr;
  const long long q = std::strtoll(quota.c_str(), &end, 10);
  if (end == quota.c_str() || *end != '\0' || q <= 0) return cpus;
  return static_cast<int>(std::min<int64_t>(cpus, (q + period - 1) / period));
}

int UsableCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  std::ifstream file("/sys/fs/cgroup/cpu.max");
  std::string cpu_max;
  if (std::getline(file, cpu_max)) cpus = CapByCpuQuota(cpus, cpu_max);
  return std::max(1, cpus);
}

ThreadSettings ConfigureThreads(int intra_op, int blas_threads, int inter_op) {
  if (intra_op > 0) at::set_num_threads(intra_op);
  if (inter_op > 0) {
    try {
      at::set_num_interop_threads(inter_op);
    } catch (const std::exception&) {
      // Already set (it can be set once per process); keep the first value.
    }
  }
  // openblas_set_num_threads is not part of the BLAS interface: look it up
  // in whatever libblas.so.3 the loader picked.
  auto set_blas = OpenBlasSetThreads();
  auto get_blas = OpenBlasGetThreads();
  if (set_blas != nullptr && blas_threads > 0) set_blas(blas_threads);
  ThreadSettings settings;
  settings.intra_op = at::get_num_threads();
  settings.blas = get_blas != nullptr ? get_blas() : -1;
  return settings;
}

}  // namespace bertology
