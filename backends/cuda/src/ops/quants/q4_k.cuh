// quants/q4_k.cuh - Q4_K on CUDA: QuantTraits<DType::Q4_K>, the device side of ggml-lite/quants/q4_k.h.
//
//   using Q = QuantTraits<DType::Q4_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * q - dmin * m
//
// 4-bit quants, no fifth bit.
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/k_quants.cpp; the code shared
// with Q5_K (elements, cuBLAS pairs, GEMV chunks) is quants/k4.cuh.
#pragma once

#include <cstddef>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q4_k.h"
#include "k4.cuh"

namespace gl::cuda {

struct Q4_KLayout {
  static constexpr DType kType = DType::Q4_K;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockQ4_K));
  static constexpr int kQs = static_cast<int>(offsetof(BlockQ4_K, qs));
  static constexpr int kQh = 0;  // no fifth bits
  static constexpr bool kHighBits = false;
  static_assert(offsetof(BlockQ4_K, scales) == 4 && kBytes % 4 == 0, "k4.cuh reads the header as 32-bit words");
};

template <>
struct QuantTraits<DType::Q4_K> : KBlock4<Q4_KLayout> {};

}  // namespace gl::cuda
