// profiler.cuh - per-node kernel times, for finding where a step's time goes (GL_CUDA_PROFILE=1).
//
//   Profiler prof;                 // enabled() reads GL_CUDA_PROFILE
//   prof.before(stream); launch(node); prof.after(stream, node);
//   prof.collect();                // after the stream was synchronised
//   // the backend prints prof.report() when it is destroyed
//
// Each launched node is bracketed by two events and its time added to a row keyed by op, source
// dtype and shapes, so "mul_mat bf16 [4096,12288] x [4096,1]" collects every such GEMV. Profiling
// turns CUDA graphs off (events inside a replay cannot be attributed), so totals include no
// launch gaps: compare their sum per step with the step's wall time to see the overhead.
//
// GL_CUDA_TIMING=1 (graphs stay on) times whole steps instead: device time from the first launch
// after a synchronisation to the next synchronisation, and the host time between a
// synchronisation's return and the next step's first launch (what the host spends per step).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ggml-lite/tensor.h"

namespace gl::cuda {

class Profiler {
 public:
  Profiler();
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  bool enabled() const { return enabled_; }
  void before(cudaStream_t s);
  void after(cudaStream_t s, const Tensor& node);
  void collect();  // the stream must be idle
  std::string report() const;

  bool timing() const { return timing_; }
  void step_begin(cudaStream_t s);  // before a compute's launches
  void step_end(cudaStream_t s);    // records the end; call collect_step() after the sync
  void collect_step();

 private:
  struct Row {
    double ms = 0;
    int64_t count = 0;
  };
  bool enabled_ = false;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
  std::vector<std::string> pending_;  // key of each recorded pair, in order
  size_t used_ = 0;
  std::map<std::string, Row> rows_;
  int64_t n_syncs_ = 0;

  using Clock = std::chrono::steady_clock;
  bool timing_ = false;
  bool step_open_ = false, step_ended_ = false;
  cudaEvent_t step_ev_[2] = {nullptr, nullptr};
  Clock::time_point last_sync_{};
  bool have_last_sync_ = false;
  int64_t n_steps_ = 0;
  double device_ms_ = 0, host_gap_ms_ = 0;
};

}  // namespace gl::cuda
