// weighted_rows.cuh - the MoE's weighted sum of its experts' rows, shared by reduce.cu (MUL ->
// PERMUTE -> SUM_ROWS as one kernel) and router.cu (the same behind the router's weights).
//
// prod = a * w (w [1, k, T] broadcast over a [H, k, T]), then the sum over k of prod's permuted
// [k, H, T] view. Output (i, t) forms its k products in order, stores each (the MUL's result) and
// sums them in double as sum_short_rows_kernel sums a row: the bits of the unfused kernels.
#pragma once

#include <array>
#include <initializer_list>
#include <span>

#include "cuda_utils.cuh"

namespace gl::cuda {

inline constexpr int64_t kShortRow = 32;  // rows up to this long take a thread each

// Decode and verify (few tokens): one block, every sum held until all reads are done.
inline constexpr int kWsumThreads = 1024;
inline constexpr int kWsumRowsPerThread = 16;
inline constexpr int kWsumMaxWeights = 256;

// wt(j, t) is weight j of token t.
template <class W>
__device__ __forceinline__ double weighted_row(const TensorArg& a, const W& wt, const TensorArg& prod, int64_t i,
                                               int64_t t) {
  // Every product's a first: prod may be a itself (each element this thread's own), and loads
  // behind stores that may alias them would go out one at a time.
  const char* pa = a.data + i * a.nb[0] + t * a.nb[2];
  float v[kShortRow];
#pragma unroll
  for (int j = 0; j < kShortRow; ++j) v[j] = j < a.ne[1] ? *reinterpret_cast<const float*>(pa + j * a.nb[1]) : 0.0f;
  char* pp = prod.data + i * prod.nb[0] + t * prod.nb[2];
  double s = 0.0;
#pragma unroll
  for (int j = 0; j < kShortRow; ++j) {
    if (j >= a.ne[1]) break;
    v[j] *= wt(j, t);
    *reinterpret_cast<float*>(pp + j * prod.nb[1]) = v[j];
    s += static_cast<double>(v[j]);
  }
  return s;
}

__device__ __forceinline__ void store_sum(const TensorArg& sum, int64_t i, int64_t t, float s) {
  *reinterpret_cast<float*>(sum.data + i * sum.nb[1] + t * sum.nb[2]) = s;
}

// One block of kWsumThreads: all rows' sums, weights ws[t * k + j] in shared memory, every sum
// stored only after the block's last read, so the sums may lie on a or on the weights' tensor.
__device__ __forceinline__ void weighted_sums_held(const TensorArg& a, const float* ws, const TensorArg& prod,
                                                   const TensorArg& sum, int64_t rows) {
  const int64_t k = a.ne[1];
  const auto wt = [&](int64_t j, int64_t t) { return ws[t * k + j]; };
  float s[kWsumRowsPerThread];  // the sums as stored (rounded once from double)
  const int n = static_cast<int>((rows - threadIdx.x + blockDim.x - 1) / blockDim.x);
#pragma unroll 1
  for (int q = 0; q < n; ++q) {
    const int64_t r = threadIdx.x + int64_t{q} * blockDim.x;
    s[q] = static_cast<float>(weighted_row(a, wt, prod, r % a.ne[0], r / a.ne[0]));
  }
  __syncthreads();
#pragma unroll 1
  for (int q = 0; q < n; ++q) {
    const int64_t r = threadIdx.x + int64_t{q} * blockDim.x;
    store_sum(sum, r % a.ne[0], r / a.ne[0], s[q]);
  }
}

// nodes[0..2] as the model builds the weighted sum: MUL(a [H, k, T], w [1, k, T]) -> PERMUTE
// (dims 0 and 1 swapped) -> SUM_ROWS [1, H, T], all F32, k <= kShortRow. Sets a and w.
inline bool weighted_sum_shape(std::span<Tensor* const> nodes, const Tensor** a_out, const Tensor** w_out) {
  if (nodes.size() < 3) return false;
  const Tensor& m = *nodes[0];
  const Tensor& p = *nodes[1];
  const Tensor& s = *nodes[2];
  if (m.op != Op::MUL || p.op != Op::PERMUTE || s.op != Op::SUM_ROWS || p.src[0] != &m || s.src[0] != &p) return false;
  const Tensor& a = *m.src[0];
  const Tensor& w = *m.src[1];
  const int64_t h = a.ne[0], k = a.ne[1], T = a.ne[2];
  for (const Tensor* t : std::initializer_list<const Tensor*>{&a, &w, &m, &s})
    if (t->type != DType::F32 || t->ne[3] != 1) return false;
  if (!same_shape(a, m) || w.ne[0] != 1 || w.ne[1] != k || w.ne[2] != T || k > kShortRow) return false;
  if (p.p<PermuteParams>().axes != std::array<int32_t, 4>{1, 0, 2, 3}) return false;
  if (s.ne[0] != 1 || s.ne[1] != h || s.ne[2] != T) return false;
  *a_out = &a;
  *w_out = &w;
  return true;
}

}  // namespace gl::cuda
