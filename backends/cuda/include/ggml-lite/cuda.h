// cuda.h - the CUDA backend.
//
//   auto gpu = gl::cuda::make_backend();            // device 0, Precision::EXACT
//   gl::Executor ex({gpu.get()});                   // ops CUDA lacks run on a CPU the scheduler adds
//   auto fast = gl::cuda::make_backend({.device = 0, .precision = gl::Precision::FAST});
//
// Every CUDA and cuBLAS call is checked; kernels are launched on the backend's stream and a
// launch error is reported per node, naming it. A split whose launches repeat exactly (a step
// graph run again with the same shapes) is captured once as a CUDA graph and replayed; set
// GL_CUDA_GRAPHS=0 in the environment to launch everything eagerly.
//
// Events are cudaEvents (timing off): wait() queues a stream wait for a CUDA event of any device
// and waits on the host for another kind's. copy_from() another CUDA backend copies device to
// device on this stream (a peer copy across devices). A failed CUDA call while launching a split
// comes back from compute() naming the node; an asynchronous fault comes back from synchronize()
// or an event's host_wait() naming the last split queued. set_tensor/get_tensor (void) still
// abort on a fault: wait on an event or synchronize() first to get it as a Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ggml-lite/backend.h"

namespace gl::cuda {

struct Options {
  int device = 0;
  bool graphs = true;  // capture and replay repeated splits as CUDA graphs
  // Until set_precision() says otherwise: EXACT splits 16-bit GEMM activations (two GEMMs), FAST
  // rounds them once (one GEMM, faster prefill).
  Precision precision = Precision::EXACT;
};

std::unique_ptr<Backend> make_backend(const Options& opt = {});
// Number of visible CUDA devices (0 when there is no driver or no device).
int device_count();

struct MemoryInfo {
  size_t free = 0, total = 0;  // bytes, as the driver reports them
};
MemoryInfo memory_info(int device = 0);

struct GraphStats {
  int64_t captures = 0, replays = 0;
};
// CUDA graphs captured and replayed by a CUDA backend so far ({} for any other backend).
GraphStats graph_stats(const Backend& backend);
// While paused, a CUDA backend launches every split eagerly and leaves its graphs as they are:
// one-off work (a benchmark's context fill, a shape seen once a repetition) then neither captures
// nor evicts the graphs of the steps around it. No-op for any other backend.
void pause_graph_capture(Backend& backend, bool paused);

struct PoolStats {
  int64_t mallocs = 0;      // cudaMalloc calls of the backend's buffer pool so far
  size_t malloc_bytes = 0;  // their bytes (size classes)
  size_t cached_bytes = 0;  // freed blocks kept for reuse now
};
// Device memory a CUDA backend has allocated ({} for any other backend). Buffers (weights, the
// executor's arenas) are the only device allocations a step makes: kernels take their scratch
// from the arena (Backend::workspace_size), so a step run again with the same shapes adds none.
PoolStats pool_stats(const Backend& backend);

}  // namespace gl::cuda
