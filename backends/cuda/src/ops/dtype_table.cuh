// dtype_table.cuh - which dtypes the CUDA kernels are instantiated for, and the dispatch from a
// runtime DType to a quantized type's device traits (quants/<type>.cuh).
//
//   if (!cuda_type_kernels(w.type).mul_mat) return false;          // supports(): refuse the node
//   with_quant(t.type, [&](auto q) { using Q = decltype(q); v = Q::elem(blk, i); });  // device, element types
//   with_weight_quant_host(w.type, [&](auto q) { launch<decltype(q)::kType>(...); });  // host, every type
//
// Two lists, because the generic kernels pay for every type they can meet: GL_CUDA_QUANT_TYPES are
// element types (read and written by CONT/CPY/SET_ROWS and the elementwise loads: Q8_0), and
// GL_CUDA_WEIGHT_QUANT_TYPES are weights only (GET_ROWS, MUL_MAT, MUL_MAT_ID), which have their own
// templated kernels, so the plain-type kernels do not grow with them (a load expanded into every
// kernel once cost 2.6% of a decode step).
// Adding a quantized type: its quants/<type>.cuh, an X(<type>) in one list and its row in
// cuda_type_kernels() (a switch without default: a DType with no row does not compile). Kernel
// code never names a quantized type; it asks its traits for block size, bytes and conversions.
#pragma once

#include <cstdint>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"
#include "quants/iq4_nl.cuh"
#include "quants/iq4_xs.cuh"
#include "quants/mxfp4.cuh"
#include "quants/q2_k.cuh"
#include "quants/q3_k.cuh"
#include "quants/q4_0.cuh"
#include "quants/q4_1.cuh"
#include "quants/q4_k.cuh"
#include "quants/q5_0.cuh"
#include "quants/q5_1.cuh"
#include "quants/q5_k.cuh"
#include "quants/q6_k.cuh"
#include "quants/q8_0.cuh"

namespace gl::cuda {

// Quantized element types: loads and stores in the generic kernels (traits with quantize()).
#define GL_CUDA_QUANT_TYPES(X) X(Q8_0)
// Quantized weight types: GET_ROWS, MUL_MAT and MUL_MAT_ID only (traits without quantize()).
#define GL_CUDA_WEIGHT_QUANT_TYPES(X) \
  X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) X(IQ4_NL) X(IQ4_XS) X(MXFP4)

// What the CUDA backend can do with a dtype (the ops' supports() ask this).
struct CudaTypeKernels {
  bool load = false;      // elements read as float by the generic kernels (CONT/CPY sources)
  bool store = false;     // rows written from float (SET_ROWS, CONT/CPY destinations)
  bool mul_mat = false;   // MUL_MAT / MUL_MAT_ID weights (GEMV chunks and cuBLAS tiles)
  bool get_rows = false;  // GET_ROWS sources (rows converted to a plain type)
};

constexpr CudaTypeKernels cuda_type_kernels(DType t) {
  constexpr CudaTypeKernels kWeight{.mul_mat = true, .get_rows = true};
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return {.load = true, .store = true, .mul_mat = true, .get_rows = true};
    case DType::I32: return {.load = true, .store = true, .get_rows = true};
    case DType::Q8_0: return {.load = true, .store = true, .mul_mat = true, .get_rows = true};
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
    case DType::MXFP4: return kWeight;
  }
  return {};
}

// Whether t is one of the weight-only quantized types (GL_CUDA_WEIGHT_QUANT_TYPES).
__host__ __device__ constexpr bool is_weight_only_quant(DType t) {
#define GL_CUDA_IS_WEIGHT_QUANT(name) t == DType::name ||
  return GL_CUDA_WEIGHT_QUANT_TYPES(GL_CUDA_IS_WEIGHT_QUANT) false;
#undef GL_CUDA_IS_WEIGHT_QUANT
}

// Whether t is a quantized element type (usable in device code, unlike dtype_traits): the generic
// kernels test this before load_quant; weight types never reach them.
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

// Host dispatch over the element types (their traits can quantize).
template <class F>
void with_quant_host(DType t, F&& f) {
#define GL_CUDA_WITH_QUANT(name) \
  if (t == DType::name) return f(QuantTraits<DType::name>{});
  GL_CUDA_QUANT_TYPES(GL_CUDA_WITH_QUANT)
#undef GL_CUDA_WITH_QUANT
  GL_ASSERT(false, "cuda: not a quantized element dtype");
}

// Host dispatch over every quantized type with device traits, element and weight types: the
// templated GET_ROWS, GEMV and cuBLAS-tile kernels. Reads of a type's blocks assume the tensor data
// keeps the alignment of its widest load (Q::kAlign); check_quant_alignment asserts it.
template <class F>
void with_weight_quant_host(DType t, F&& f) {
#define GL_CUDA_WITH_WEIGHT_QUANT(name) \
  if (t == DType::name) return f(QuantTraits<DType::name>{});
  GL_CUDA_QUANT_TYPES(GL_CUDA_WITH_WEIGHT_QUANT)
  GL_CUDA_WEIGHT_QUANT_TYPES(GL_CUDA_WITH_WEIGHT_QUANT)
#undef GL_CUDA_WITH_WEIGHT_QUANT
  GL_ASSERT(false, "cuda: no device traits for this quantized dtype");
}

// Asserts that every block of t starts at its type's read alignment (Q::kAlign: data and strides,
// rows being whole blocks); a plain t passes.
inline void check_quant_alignment(const Tensor& t) {
  if (!dtype_traits(t.type).is_quant) return;
  uint64_t bits = reinterpret_cast<uintptr_t>(t.data);
  for (int d = 1; d < kMaxDims; ++d) bits |= static_cast<uint64_t>(t.nb[d]);
  with_weight_quant_host(t.type, [&](auto q) {
    GL_ASSERT(bits % decltype(q)::kAlign == 0, "cuda: quantized tensor data or strides break its block alignment");
  });
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
