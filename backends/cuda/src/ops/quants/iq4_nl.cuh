// quants/iq4_nl.cuh - IQ4_NL on CUDA: QuantTraits<DType::IQ4_NL>, the device side of ggml-lite/quants/iq4_nl.h.
//
//   using Q = QuantTraits<DType::IQ4_NL>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // d * kIQ4_NLValues[q]
//
// Blocks are 18 bytes (2-byte alignment); the 16 levels are looked up in registers (block_io.cuh).
// Bit-exact with the reference dequantizer in ggml-lite/src/quants/nonlinear_quants.cpp; the shared 32-element
// nibble-block code (elements, cuBLAS pairs, GEMV chunks) is quants/block32.cuh.
#pragma once

#include <cstddef>

#include "block32.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/iq4_nl.h"

namespace gl::cuda {

struct IQ4_NLLayout {
  static constexpr DType kType = DType::IQ4_NL;
  static constexpr int kBytes = static_cast<int>(sizeof(BlockIQ4_NL));
  static constexpr int kAlign = 2;
  static constexpr int kQs = 2;
  static_assert(kQs == offsetof(BlockIQ4_NL, qs) && kBytes % kAlign == 0, "layout of BlockIQ4_NL");
  static constexpr bool kMin = false;
  static constexpr bool kHighBits = false;
  static constexpr uint32_t kW0 = qio::level_word(kIQ4_NLValues, 0), kW1 = qio::level_word(kIQ4_NLValues, 1);
  static constexpr uint32_t kW2 = qio::level_word(kIQ4_NLValues, 2), kW3 = qio::level_word(kIQ4_NLValues, 3);
  template <class Src = qio::FromGlobal>
  __device__ static Head32 head(const char* blk) {
    return {qio::f16(qio::ld16<Src>(blk)), 0.0f, 0u};
  }
  __device__ static int t(int q) { return qio::level16<kW0, kW1, kW2, kW3>(static_cast<uint32_t>(q)); }
};

template <>
struct QuantTraits<DType::IQ4_NL> : Block32<IQ4_NLLayout> {};

}  // namespace gl::cuda
