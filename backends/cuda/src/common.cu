// common.cu - where the checking macros of common.cuh end when a CUDA or cuBLAS call fails, and
// the environment switches of the backend.
#include "common.cuh"

#include <cstdlib>
#include <cstring>

namespace gl::cuda {

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e && std::strcmp(e, value) == 0;
}

bool pdl_enabled() {
  static const bool on = !env_is("GL_CUDA_PDL", "0");
  return on;
}

void fail(const char* file, int line, const char* call, const char* msg) {
  std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gl::cuda
