// quants/mxfp4.cuh - MXFP4 on CUDA: QuantTraits<DType::MXFP4>, the device side of ggml-lite/quants/mxfp4.h.
//
//   using Q = QuantTraits<DType::MXFP4>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // kMXFP4Values[q] * 2^(e - 128)
//
// Blocks are 17 bytes, so nothing beyond bytes is aligned: quants are read byte by byte.
// The scale is a power of two, so d * v and v * d (the reference) round alike.
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/nonlinear_quants.cpp; the shared 32-element
// nibble-block code (elements, cuBLAS pairs, GEMV chunks) is quants/block32.cuh.
#pragma once

#include <cstddef>

#include "block32.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/mxfp4.h"

namespace gl::cuda {

struct MXFP4Layout {
  static constexpr DType kType = DType::MXFP4;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockMXFP4));
  static constexpr int kAlign = 1;
  static constexpr int kQs = 1;
  static_assert(kQs == offsetof(BlockMXFP4, qs) && kBytes % kAlign == 0, "layout of BlockMXFP4");
  static constexpr bool kMin = false;
  static constexpr bool kHighBits = false;
  static constexpr uint32_t kW0 = qio::level_word(kMXFP4Values, 0), kW1 = qio::level_word(kMXFP4Values, 1);
  static constexpr uint32_t kW2 = qio::level_word(kMXFP4Values, 2), kW3 = qio::level_word(kMXFP4Values, 3);
  template <class Src = qio::FromGlobal>
  __device__ static Head32 head(const char* blk) {
    return {qio::e8m0_half(qio::ld8<Src>(blk)), 0.0f, 0u};
  }
  __device__ static int t(int q) { return qio::level16<kW0, kW1, kW2, kW3>(static_cast<uint32_t>(q)); }
};

template <>
struct QuantTraits<DType::MXFP4> : Block32<MXFP4Layout> {};

}  // namespace gl::cuda
