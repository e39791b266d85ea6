// quants/iq4_xs.cuh - IQ4_XS on CUDA: QuantTraits<DType::IQ4_XS>, the device side of
// ggml-lite/quants/iq4_xs.h.
//
//   using Q = QuantTraits<DType::IQ4_XS>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * (ls - 32)) * level
//
// Sub-block s of 32 keeps IQ4_NL's layout in qs[16s ..] (element j low nibble, j + 16 high) with a
// 6-bit scale split over scales_l and scales_h. Bit-exact with dequantize_row_iq4_xs
// (ggml-lite/src/quants/nonlinear_quants.cpp). Blocks are 136 bytes: 32-bit reads.
// GEMV chunk: 8 quant bytes qs[16s + 8g ..]: 16 elements in two runs of 8, one scale.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "block_io.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/iq4_xs.h"

namespace gl::cuda {

template <>
struct QuantTraits<DType::IQ4_XS> {
  static constexpr DType kType = DType::IQ4_XS;
  static constexpr int kBlock = kIQ4_XSBlock;
  static constexpr int kBlockBytes = static_cast<int>(sizeof(BlockIQ4_XS));
  static constexpr int kAlign = 4;
  static constexpr int kQs = static_cast<int>(offsetof(BlockIQ4_XS, qs));
  static_assert(offsetof(BlockIQ4_XS, scales_h) == 2 && offsetof(BlockIQ4_XS, scales_l) == 4 && kQs % 4 == 0 &&
                    kBlockBytes % 4 == 0,
                "32-bit reads: (d, scales_h), scales_l, quants");
  static constexpr uint32_t kW0 = qio::level_word(kIQ4_NLValues, 0), kW1 = qio::level_word(kIQ4_NLValues, 1);
  static constexpr uint32_t kW2 = qio::level_word(kIQ4_NLValues, 2), kW3 = qio::level_word(kIQ4_NLValues, 3);

  __device__ static int value(uint32_t n) { return qio::level16<kW0, kW1, kW2, kW3>(n); }
  // d * (ls - 32) of sub-block s.
  template <class Src = qio::FromGlobal>
  __device__ static float sub_scale(const char* blk, int s) {
    const uint32_t dh = qio::ld32<4, Src>(blk), sl = qio::ld32<4, Src>(blk + 4);
    const uint32_t ls = ((qio::byte_of(sl, s >> 1) >> (4 * (s & 1))) & 0xFu) | (((dh >> (16 + 2 * s)) & 3u) << 4);
    return __fmul_rn(qio::f16(dh), qio::to_f(static_cast<int>(ls) - 32));
  }

  __device__ static float elem(const char* blk, int i) {
    const int s = i >> 5, j = i & 31;
    const uint32_t byte = qio::ld8(blk + kQs + 16 * s + (j & 15));
    return __fmul_rn(sub_scale(blk, s), qio::to_f(value(j < 16 ? byte & 0xFu : byte >> 4)));
  }
  // Elements 2p and 2p+1 (same sub-block), each rounded to half once (the cuBLAS weight tiles).
  __device__ static __half2 pair_f16(const char* blk, int p) {
    return __floats2half2_rn(elem(blk, 2 * p), elem(blk, 2 * p + 1));
  }
  // Elements i .. i + 15 (i a multiple of 16: half a sub-block) as elem() gives them, for the MoE
  // tensor-core tiles (matmul_id_mma.cu): the sub-block's scale once, its quant bytes a word at a time.
  // Src: the block in global memory or staged in shared memory.
  template <class Src = qio::FromGlobal>
  __device__ static void values16(const char* blk, int i, float (&v)[16]) {
    const int s = i >> 5;
    const float d = sub_scale<Src>(blk, s);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t b = qio::ld32<4, Src>(blk + kQs + 16 * s + 4 * w);
      const uint32_t q = (i & 16 ? b >> 4 : b) & 0x0F0F0F0Fu;
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * w + e] = __fmul_rn(d, qio::to_f(value(qio::byte_of(q, e))));
    }
  }

  // GEMV (matmul_gemv.cu): chunk c is piece w = c % 16 of block c / 16: s = w / 2, g = w % 2; runs
  // hold elements 32s + 8g .. + 7 (low nibbles) and 32s + 16 + 8g .. + 7 (high nibbles).
  static constexpr int kChunk = 16;
  static constexpr int kRuns = 2;
  __device__ static int64_t run_start(int64_t c, int r) {
    const int w = static_cast<int>(c & 15);
    return (c >> 4) * kBlock + 32 * (w >> 1) + 8 * (w & 1) + 16 * r;
  }
  struct Chunk {
    uint32_t q[2];
    float d;  // the sub-block's scale
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 4) * int64_t{kBlockBytes};
    const int w = static_cast<int>(c & 15);
    const char* qs = blk + kQs + 16 * (w >> 1) + 8 * (w & 1);
    out.q[0] = qio::ld32<4>(qs);
    out.q[1] = qio::ld32<4>(qs + 4);
    out.d = sub_scale(blk, w >> 1);
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t byte = qio::byte_of(w.q[e >> 2], e & 3);
      s = fmaf(qio::small_f(value(byte & 0xFu)), x[e], s);
      s = fmaf(qio::small_f(value(byte >> 4)), x[8 + e], s);
    }
    return fmaf(w.d, s, acc);
  }
};

}  // namespace gl::cuda
