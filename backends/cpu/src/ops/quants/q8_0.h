// quants/q8_0.h - how the CPU kernels read Q8_0 weights: simd::Stored<DType::Q8_0>.
//
//   simd::Vec w = simd::load_weights<DType::Q8_0>(row, k);  // d * q for kLanes quants of one block
//   simd::Vec d = Stored<DType::Q8_0>::scale(row, k);        // or the block's scale once, then
//   w = Stored<DType::Q8_0>::vec(row, k, d);                  //   each of its vectors
//
// A vector holds kLanes quants of one block scaled by that block's d, each product rounded once,
// so the result equals dequantize_row_q8_0 (ggml-lite/src/quants/q8_0.cpp) bit for bit.
#pragma once

#include "../simd.h"
#include "ggml-lite/quants/q8_0.h"

namespace gl::cpu::simd {
namespace {

template <>
struct Stored<DType::Q8_0> {
  static constexpr int64_t kBlock = kQ8_0Block;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);
  static Vec vec(const void* row, int64_t k) { return vec(row, k, scale(row, k)); }
  // The block's d, broadcast: read once per block, then vec(row, k, d) for each of its vectors.
  static Vec scale(const void* row, int64_t k) {
    return vset1(half_to_float(static_cast<const BlockQ8_0*>(row)[k / kBlock].d));
  }
  static Vec vec(const void* row, int64_t k, Vec d) {
    return vmul(d, load_i8(static_cast<const BlockQ8_0*>(row)[k / kBlock].qs + k % kBlock));
  }
  static float one(const void* row, int64_t k) {
    const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[k / kBlock];
    return half_to_float(b.d) * static_cast<float>(b.qs[k % kBlock]);
  }
};

}  // namespace
}  // namespace gl::cpu::simd
