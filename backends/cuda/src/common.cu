// common.cu - where the checking macros of common.cuh end when a CUDA or cuBLAS call fails.
#include "common.cuh"

#include <cstdlib>
#include <cstring>

namespace gl::cuda {

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("GL_CUDA_PDL");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

void fail(const char* file, int line, const char* call, const char* msg) {
  std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gl::cuda
