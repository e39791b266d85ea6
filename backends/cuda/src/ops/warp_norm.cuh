// warp_norm.cuh - the sum of squares of a row held by one full warp (32 lanes, lane l holding
// elements l + 32 e), as the short-row norms form it (norm.cu's short_norm_kernel, ssm.cu's
// conv_norm_kernel, gdr.cu's gated-norm tail): a lane sums its elements' squares in double in
// element order, then the warp's xor tree. Every lane gets the row's sum, and the three kernels
// keep the same bits for the same row.
#pragma once

#include "cuda_utils.cuh"

namespace gl::cuda {

template <int kE>
__device__ __forceinline__ double warp_sum_squares(const float (&v)[kE]) {
  double ss = 0.0;
#pragma unroll
  for (int e = 0; e < kE; ++e) ss += static_cast<double>(v[e]) * v[e];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(kFullMask, ss, off);
  return ss;
}

}  // namespace gl::cuda
