// cuda.h - the CUDA backend.
//
//   auto gpu = gl::cuda::make_backend();            // device 0
//   auto cpu = gl::cpu::make_backend();
//   gl::Executor ex({gpu.get(), cpu.get()});        // ops CUDA lacks fall back to the CPU
//
// Every CUDA and cuBLAS call is checked; kernels are launched on the backend's stream and a
// launch error is reported per node, naming it.
#pragma once

#include <memory>

#include "ggml-lite/backend.h"

namespace gl::cuda {

struct Options {
  int device = 0;
};

std::unique_ptr<Backend> make_backend(const Options& opt = {});
// Number of visible CUDA devices (0 when there is no driver or no device).
int device_count();

}  // namespace gl::cuda
