// dtype_table.cuh - which dtypes the CUDA kernels are instantiated for, and the dispatch from a
// runtime DType to a quantized type's device traits (quants/<type>.cuh).
//
//   if (!cuda_type_kernels(w.type).mul_mat) return false;          // supports(): refuse the node
//   with_quant(t.type, [&](auto q) { using Q = decltype(q); v = Q::elem(blk, i); });  // device
//   with_quant_host(w.type, [&](auto q) { launch<decltype(q)::kType>(...); });      // host
//
// Adding a quantized type: its quants/<type>.cuh, an X(<type>) in GL_CUDA_QUANT_TYPES and its row
// in cuda_type_kernels() (a switch without default: a DType with no row does not compile). Kernel
// code never names a quantized type; it asks its traits for block size, bytes and conversions.
#pragma once

#include <cstdint>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"
#include "quants/q8_0.cuh"

namespace gl::cuda {

// Every quantized type with device traits.
#define GL_CUDA_QUANT_TYPES(X) X(Q8_0)

// What the CUDA backend can do with a dtype (the ops' supports() ask this).
struct CudaTypeKernels {
  bool load = false;     // elements read as float (GET_ROWS, CONT/CPY sources)
  bool store = false;    // rows written from float (SET_ROWS, CONT/CPY destinations)
  bool mul_mat = false;  // MUL_MAT / MUL_MAT_ID weights (GEMV chunks and cuBLAS tiles)
};

constexpr CudaTypeKernels cuda_type_kernels(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return {true, true, true};
    case DType::I32: return {true, true, false};
    case DType::Q8_0: return {true, true, true};
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: return {};  // no device kernels: the CPU runs these nodes
  }
  return {};
}

// Whether t is block-quantized with device traits (usable in device code, unlike dtype_traits).
__host__ __device__ constexpr bool is_quant_type(DType t) {
#define GL_CUDA_IS_QUANT(name) t == DType::name ||
  return GL_CUDA_QUANT_TYPES(GL_CUDA_IS_QUANT) false;
#undef GL_CUDA_IS_QUANT
}

// Calls f(QuantTraits<T>{}) for the quantized type t; a plain t traps (callers check is_quant_type).
template <class F>
__device__ __forceinline__ void with_quant(DType t, F&& f) {
#define GL_CUDA_WITH_QUANT(name) \
  if (t == DType::name) return f(QuantTraits<DType::name>{});
  GL_CUDA_QUANT_TYPES(GL_CUDA_WITH_QUANT)
#undef GL_CUDA_WITH_QUANT
  __trap();
}

template <class F>
void with_quant_host(DType t, F&& f) {
#define GL_CUDA_WITH_QUANT(name) \
  if (t == DType::name) return f(QuantTraits<DType::name>{});
  GL_CUDA_QUANT_TYPES(GL_CUDA_WITH_QUANT)
#undef GL_CUDA_WITH_QUANT
  GL_ASSERT(false, "cuda: no device traits for this quantized dtype");
}

// Element i0 of a quantized row (blocks blk_stride bytes apart), expanded per type without a
// lambda or a trap path, so the plain-type kernels that include it keep their code lean.
__device__ __forceinline__ float load_quant(DType t, const char* row, int64_t i0, int64_t blk_stride) {
#define GL_CUDA_LOAD_QUANT(name)                                                           \
  if (t == DType::name) {                                                                  \
    using Q = QuantTraits<DType::name>;                                                    \
    return Q::elem(row + (i0 / Q::kBlock) * blk_stride, static_cast<int>(i0 % Q::kBlock)); \
  }
  GL_CUDA_QUANT_TYPES(GL_CUDA_LOAD_QUANT)
#undef GL_CUDA_LOAD_QUANT
  return 0.0f;  // not reached: callers test is_quant_type first
}

// The same for a dense row (adjacent blocks), as the GEMV chunks read it.
__device__ __forceinline__ float load_quant_dense(DType t, const char* row, int64_t i0) {
#define GL_CUDA_LOAD_QUANT_DENSE(name)                                                                  \
  if (t == DType::name) {                                                                               \
    using Q = QuantTraits<DType::name>;                                                                 \
    return Q::elem(row + (i0 / Q::kBlock) * int64_t{Q::kBlockBytes}, static_cast<int>(i0 % Q::kBlock)); \
  }
  GL_CUDA_QUANT_TYPES(GL_CUDA_LOAD_QUANT_DENSE)
#undef GL_CUDA_LOAD_QUANT_DENSE
  return 0.0f;  // not reached: callers test is_quant_type first
}

template <class Q>
__device__ __forceinline__ void copy_block(const char* from, char* to) {
  static_assert(Q::kBlockBytes % 2 == 0, "blocks are copied as 16-bit words");
  const auto* f = reinterpret_cast<const uint16_t*>(from);
  auto* d = reinterpret_cast<uint16_t*>(to);
  for (int k = 0; k < Q::kBlockBytes / 2; ++k) d[k] = f[k];
}

}  // namespace gl::cuda
