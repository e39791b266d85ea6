// common.cu - where the checking macros of common.cuh end when a CUDA or cuBLAS call fails.
#include "common.cuh"

namespace gl::cuda {

void fail(const char* file, int line, const char* call, const char* msg) {
  std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gl::cuda
