#include "server/core/model/threading.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <exception>

namespace bertology {
namespace {

using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

}  // namespace

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
  auto set_blas = reinterpret_cast<SetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get_blas = reinterpret_cast<GetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_blas != nullptr && blas_threads > 0) set_blas(blas_threads);
  ThreadSettings settings;
  settings.intra_op = at::get_num_threads();
  settings.blas = get_blas != nullptr ? get_blas() : -1;
  return settings;
}

}  // namespace bertology
