// quants/q5_k.cuh - Q5_K on CUDA: QuantTraits<DType::Q5_K>, the device side of ggml-lite/quants/q5_k.h.
//
//   using Q = QuantTraits<DType::Q5_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * q - dmin * m
//
// Q4_K with a fifth bit per quant in qh.
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/k_quants.cpp; the code shared
// with Q4_K (elements, cuBLAS pairs, GEMV chunks) is quants/k4.cuh.
#pragma once

#include <cstddef>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q5_k.h"
#include "k4.cuh"

namespace gl::cuda {

struct Q5_KLayout {
  static constexpr DType kType = DType::Q5_K;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockQ5_K));
  static constexpr int kQs = static_cast<int>(offsetof(BlockQ5_K, qs));
  static constexpr int kQh = static_cast<int>(offsetof(BlockQ5_K, qh));
  static constexpr bool kHighBits = true;
  static_assert(offsetof(BlockQ5_K, scales) == 4 && kBytes % 4 == 0, "k4.cuh reads the header as 32-bit words");
};

template <>
struct QuantTraits<DType::Q5_K> : KBlock4<Q5_KLayout> {};

}  // namespace gl::cuda
