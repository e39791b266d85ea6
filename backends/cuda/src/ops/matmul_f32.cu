// matmul_f32.cu - MUL_MAT of small F32 weight matrices by many activation rows, on CUDA cores.
//
// Why: the MoE router [2048, 256] and the shared expert's gate [2048, 1] are F32 (llama.cpp's
// converters keep them so). At pp512 on the H200 (35B-A3B) cuBLAS's pedantic SGEMM took 2.1 ms
// for the router and the GEMV, re-reading 64 KB of activations per weight row, 0.58 ms: 10% of
// the step. Here a block computes a 32 x 32 output tile (2 x 2 per thread) with K staged through
// shared memory in steps of 64. (64 x 64 tiles, 4 x 4 per thread: 160 us for the router on an
// H100, 32 blocks for 132 SMs.) Weight matrices of fewer than kF32TiledMinRows rows (the shared
// expert's gate, N = 1) stay on the GEMV for any number of rows: one block column would walk K
// alone (135 us against the GEMV's 13). Every output is one F32 FMA chain over k in order, as the
// reference's (the sum order differs from the GEMV's, so prefill rows are not the bits of decode
// rows; verify rows stay on the GEMV, which keeps MTP parity).
#include <algorithm>

#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda::mm {
namespace {

constexpr int kTile = 32;  // activation rows and weight rows per block
constexpr int kStep = 64;  // K per shared-memory stage
constexpr int kThreads = 256;
constexpr int kLoads = kTile * kStep / kThreads;  // x (and w) elements a thread loads per stage
constexpr int kPer = 2;                           // outputs per thread along each side
static_assert((kTile / kPer) * (kTile / kPer) == kThreads, "one thread per 2 x 2 outputs");

struct F32Args {
  const char* w;  // [K, N], rows nb1 bytes apart
  int64_t w_nb1;
  const char* x;  // [K, M], rows nb1 bytes apart
  int64_t x_nb1;
  float* dst;  // [N, M], contiguous
  int64_t k, n, m;
};

// Element (kk, r) of a K step: row r0 + r of a matrix with row stride nb1, k0 + kk along it.
__device__ __forceinline__ float load_at(const char* base, int64_t nb1, int64_t rows, int64_t k, int64_t r,
                                         int64_t kk) {
  return r < rows && kk < k ? *reinterpret_cast<const float*>(base + r * nb1 + kk * int64_t{sizeof(float)}) : 0.0f;
}

// A stage's elements of x and w a thread loads: element e = tid + i * kThreads is k0 + e % kStep of
// row e / kStep (64 consecutive k of a row per 64 threads: each row's 256 bytes read together).
struct StageRegs {
  float x[kLoads], w[kLoads];
  __device__ void load(const F32Args& p, int tid, int64_t n0, int64_t m0, int64_t k0) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int e = tid + i * kThreads, r = e / kStep, kk = e % kStep;
      x[i] = load_at(p.x, p.x_nb1, p.m, p.k, m0 + r, k0 + kk);
      w[i] = load_at(p.w, p.w_nb1, p.n, p.k, n0 + r, k0 + kk);
    }
  }
};

// The next stage's loads are issued before the current stage's FMAs (register double buffering):
// with one block per SM (the router: 128 blocks), a stage's global round trip was the kernel's time
// (105 us for [2048, 256] x 512 rows at 16 k a stage, H100). Each output is still one FMA chain
// over k in order, whatever the staging: the same bits.
__global__ void __launch_bounds__(kThreads) f32_tiled_kernel(F32Args p) {
  __shared__ float xs[kStep][kTile + 1], ws[kStep][kTile + 1];  // +1: a warp's stores hit 32 banks
  const int tid = static_cast<int>(threadIdx.x), tx = tid % (kTile / kPer), ty = tid / (kTile / kPer);
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTile, m0 = static_cast<int64_t>(blockIdx.y) * kTile;
  static_assert(kTile * kStep % kThreads == 0, "whole loads per thread");
  float acc[kPer][kPer] = {};
  StageRegs next;
  next.load(p, tid, n0, m0, 0);
  for (int64_t k0 = 0; k0 < p.k; k0 += kStep) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int e = tid + i * kThreads, r = e / kStep, kk = e % kStep;
      xs[kk][r] = next.x[i];
      ws[kk][r] = next.w[i];
    }
    __syncthreads();
    if (k0 + kStep < p.k) next.load(p, tid, n0, m0, k0 + kStep);
#pragma unroll
    for (int kk = 0; kk < kStep; ++kk) {
      float a[kPer], b[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) a[i] = xs[kk][ty * kPer + i], b[i] = ws[kk][tx * kPer + i];
#pragma unroll
      for (int i = 0; i < kPer; ++i)
#pragma unroll
        for (int j = 0; j < kPer; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i)
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t m = m0 + ty * kPer + i, n = n0 + tx * kPer + j;
      if (m < p.m && n < p.n) p.dst[m * p.n + n] = acc[i][j];
    }
}

}  // namespace

bool f32_tiled_supported(const Tensor& w, const Tensor& x, const Tensor& dst) {
  const bool plain_w = w.type == DType::F32 && w.nb[0] == sizeof(float) && w.ne[2] == 1 && w.ne[3] == 1;
  const bool plain_x = x.type == DType::F32 && x.nb[0] == sizeof(float) && x.ne[2] == 1 && x.ne[3] == 1;
  const bool dense_dst = dst.nb[0] == sizeof(float) && dst.nb[1] == dst.ne[0] * sizeof(float);
  return plain_w && plain_x && dense_dst && nbytes(w) <= kF32TiledMaxBytes && w.ne[1] >= kF32TiledMinRows &&
         ceil_div<int64_t>(x.ne[1], kTile) <= kMaxGridY;
}

void f32_tiled_mul_mat(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst) {
  const F32Args p{static_cast<const char*>(w.data),
                  static_cast<int64_t>(w.nb[1]),
                  static_cast<const char*>(x.data),
                  static_cast<int64_t>(x.nb[1]),
                  static_cast<float*>(dst.data),
                  w.ne[0],
                  w.ne[1],
                  x.ne[1]};
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(p.n, kTile)),
                  static_cast<unsigned>(ceil_div<int64_t>(p.m, kTile)));
  f32_tiled_kernel<<<grid, kThreads, 0, ctx.stream>>>(p);
  GL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gl::cuda::mm
