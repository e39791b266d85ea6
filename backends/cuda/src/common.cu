// common.cu - where the checking macros of common.cuh end when a CUDA or cuBLAS call fails, and
// the dependent-launch switch.
#include "common.cuh"

#include <cstdlib>

#include "ggml-lite/diag.h"

namespace gl::cuda {

bool pdl_enabled() {
  static const bool on = !diag_env(Diag::CUDA_PDL_OFF);  // read once: every launch asks
  return on;
}

namespace {

thread_local int fault_scopes = 0;  // FaultScope nesting on this thread

}  // namespace

FaultScope::FaultScope() { ++fault_scopes; }
FaultScope::~FaultScope() { --fault_scopes; }

void fail(const char* file, int line, const char* call, const char* msg) {
  if (fault_scopes > 0) throw DeviceFault{std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + msg};
  std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gl::cuda
