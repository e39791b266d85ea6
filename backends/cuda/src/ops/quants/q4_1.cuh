// quants/q4_1.cuh - Q4_1 on CUDA: QuantTraits<DType::Q4_1>, the device side of ggml-lite/quants/q4_1.h.
//
//   using Q = QuantTraits<DType::Q4_1>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // d * q + m
//
// Blocks are 20 bytes: the header (d, m) and the quant bytes are read as 32-bit words.
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/legacy_quants.cpp; the shared 32-element
// nibble-block code (elements, cuBLAS pairs, GEMV chunks) is quants/block32.cuh.
#pragma once

#include <cstddef>

#include "block32.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q4_1.h"

namespace gl::cuda {

struct Q4_1Layout {
  static constexpr DType kType = DType::Q4_1;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockQ4_1));
  static constexpr int kAlign = 4;
  static constexpr int kQs = 4;
  static_assert(kQs == offsetof(BlockQ4_1, qs) && kBytes % kAlign == 0, "layout of BlockQ4_1");
  static constexpr bool kMin = true;
  static constexpr bool kHighBits = false;
  template <class Src = qio::FromGlobal>
  __device__ static Head32 head(const char* blk) {
    const uint32_t dm = qio::ld32<4, Src>(blk);
    return {qio::f16(dm), qio::f16(dm >> 16), 0u};
  }
  __device__ static int t(int q) { return q; }
};

template <>
struct QuantTraits<DType::Q4_1> : Block32<Q4_1Layout> {};

}  // namespace gl::cuda
