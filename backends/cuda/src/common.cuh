// common.cuh - shared by every CUDA source: the checking macros and the per-backend context.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

// A failed CUDA or cuBLAS call aborts with file:line and the call, except inside a
// FaultScope (the launches of a split), where it throws a DeviceFault that the launcher turns
// into the Status of the node it was launching.
[[noreturn]] void fail(const char* file, int line, const char* call, const char* msg);

struct DeviceFault {
  std::string what;  // "file:line: call: message"
};

// While one lives on this thread, fail() throws DeviceFault instead of aborting. A scope, not a
// flag passed down: the one checking macro sits in every launcher of every op family.
class FaultScope {
 public:
  FaultScope();
  ~FaultScope();
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
};

#define GL_CUDA_CHECK(call)                                                                               \
  do {                                                                                                    \
    cudaError_t gl_err_ = (call);                                                                         \
    if (gl_err_ != cudaSuccess) ::gl::cuda::fail(__FILE__, __LINE__, #call, cudaGetErrorString(gl_err_)); \
  } while (0)

#define GL_CUBLAS_CHECK(call)                                                                                        \
  do {                                                                                                               \
    cublasStatus_t gl_st_ = (call);                                                                                  \
    if (gl_st_ != CUBLAS_STATUS_SUCCESS) ::gl::cuda::fail(__FILE__, __LINE__, #call, cublasGetStatusString(gl_st_)); \
  } while (0)

// Programmatic dependent launch (sm_90).
// A kernel calls pdl_trigger() first so that a following kernel launched with programmatic stream
// serialization (the GEMVs, see matmul_gemv.cu) may start early; that kernel touches nothing an
// earlier kernel writes before pdl_wait(), which returns once every earlier grid has completed and
// its writes are visible. In a kernel launched normally both are no-ops. Measured on the H200, 9B
// BF16 decode: GEMVs as dependents 153.7 tok/s vs 150.7 without; every kernel as a dependent 151.6.
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// Whether kernels are launched as programmatic dependents (GL_CUDA_PDL=0 turns it off).
bool pdl_enabled();

// kernel<<<grid, block, 0, stream>>>(args...), as a programmatic dependent when enabled: the
// kernel must call pdl_wait() before touching memory an earlier kernel writes (every kernel
// launched through here starts with pdl_trigger(); pdl_wait();).
// launch_pdl_smem: the same with `smem` bytes of dynamic shared memory a block.
template <class... KArgs, class... Args>
void launch_pdl_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args... args) {
  if (!pdl_enabled()) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return;
  }
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  GL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

template <class... KArgs, class... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
  launch_pdl_smem(kernel, grid, block, 0, stream, args...);
}

// The int8 activations (matmul_gemv.cu) the last GEMV of a launch sequence left in its workspace:
// input x, as it was when quantized. A product whose workspace (shared through
// Backend::workspace_share, so held since) and input are the same reads them as they are.
struct Q8Memo {
  const void* workspace = nullptr;
  const Tensor* x = nullptr;
  const void* data = nullptr;
  bool holds(const void* ws, const Tensor& t) const { return ws == workspace && &t == x && t.data == data; }
};

// The persistent tensors (TENSOR_WEIGHT roots: weights and caches) a launched node has written
// into, as byte ranges. A GEMV may load the weights of a tensor outside them before its pdl_wait
// (gemv_kernel.cuh): no kernel of this backend writes them, and host copies are stream-ordered
// (a kernel after a copy starts after it). Ranges outlive the tensors, which is only cautious.
class WrittenWeights {
 public:
  // Records what `node` writes into a persistent tensor (through a view of it: SET_ROWS, CPY).
  void note(const Tensor& node);
  // Whether w's bytes lie in a persistent tensor no noted node has written (false when
  // GL_CUDA_EARLY_WEIGHTS=0, or past kMaxRanges ranges).
  bool untouched(const Tensor& w) const;

 private:
  static constexpr size_t kMaxRanges = 1024;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;  // [begin, end)
  bool overflow_ = false;
};

// What a kernel entry needs: the stream to launch on, the cuBLAS handle bound to it, the run's
// precision (which GEMM path 16-bit weights take, see matmul.cu), the sequence's Q8Memo, and the
// persistent tensors written so far.
struct Ctx {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  int device = 0;
  Precision precision = Precision::EXACT;
  Q8Memo* q8 = nullptr;                     // nullptr: every GEMV quantizes its own input
  const WrittenWeights* written = nullptr;  // nullptr: no weights are loaded early
  // kArrivalSlots device counters, zero between launches: a kernel whose blocks count their
  // arrivals (the last one finishing the work) leaves them zero again. Launches on the stream are
  // ordered, so every such kernel may use them.
  unsigned* arrivals = nullptr;
};
inline constexpr int64_t kArrivalSlots = 1024;

}  // namespace gl::cuda
