// quants/q4_0.cuh - Q4_0 on CUDA: QuantTraits<DType::Q4_0>, the device side of ggml-lite/quants/q4_0.h.
//
//   using Q = QuantTraits<DType::Q4_0>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // d * (q - 8)
//
// Blocks are 18 bytes, so only 2-byte alignment holds: quant bytes are read as 16-bit words.
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/legacy_quants.cpp; the shared 32-element
// nibble-block code (elements, cuBLAS pairs, GEMV chunks) is quants/block32.cuh.
#pragma once

#include <cstddef>

#include "block32.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q4_0.h"

namespace gl::cuda {

struct Q4_0Layout {
  static constexpr DType kType = DType::Q4_0;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockQ4_0));
  static constexpr int kAlign = 2;
  static constexpr int kQs = 2;
  static_assert(kQs == offsetof(BlockQ4_0, qs) && kBytes % kAlign == 0, "layout of BlockQ4_0");
  static constexpr bool kMin = false;
  static constexpr bool kHighBits = false;
  template <class Src = qio::FromGlobal>
  __device__ static Head32 head(const char* blk) {
    return {qio::f16(qio::ld16<Src>(blk)), 0.0f, 0u};
  }
  __device__ static int t(int q) { return q - 8; }
};

template <>
struct QuantTraits<DType::Q4_0> : Block32<Q4_0Layout> {};

}  // namespace gl::cuda
