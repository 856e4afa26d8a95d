#include "server/core/model/threading.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <exception>
#include <mutex>

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
