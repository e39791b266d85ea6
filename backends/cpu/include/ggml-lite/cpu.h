// cpu.h - the CPU reference backend.
//
//   auto cpu = gl::cpu::make_backend({.n_threads = 2});
//   gl::Executor ex({cpu.get()});
//
// Plain loops over ne/nb for every op in the table, float (or wider)
// accumulation, no fast-math, rows split over OpenMP threads. Supports every
// op and every dtype combination the builders accept. set_precision(FAST) trades exactness for
// speed: int8 activations for Q4_0, Q8_0, Q4_K, Q5_K and Q6_K weights, vector sums in attention.
#pragma once

#include <memory>

#include "ggml-lite/backend.h"

namespace gl::cpu {

struct Options {
  int n_threads = 0;  // 0: all hardware threads
};

std::unique_ptr<Backend> make_backend(const Options& opt = {});

}  // namespace gl::cpu
