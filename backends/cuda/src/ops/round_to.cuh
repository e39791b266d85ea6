// round_to.cuh - a float rounded to the element type of a GEMM operand (F32, F16, BF16), to
// nearest even: the activation conversions of matmul.cu (cuBLAS) and matmul_id_mma.cu (WMMA).
//
//   const __half h = from_f32<__half>(v);
//   const __half lo = from_f32<__half>(v - static_cast<float>(h));   // the rounding residue
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gl::cuda {

template <class T>
__device__ __forceinline__ T from_f32(float f);
template <>
__device__ __forceinline__ float from_f32<float>(float f) {
  return f;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float f) {
  return __float2half_rn(f);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float f) {
  return __float2bfloat16_rn(f);
}

}  // namespace gl::cuda
