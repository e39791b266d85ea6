// quants/q2_k.cuh - Q2_K on CUDA: QuantTraits<DType::Q2_K>, the device side of ggml-lite/quants/q2_k.h.
//
//   using Q = QuantTraits<DType::Q2_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * q - dmin * m
//
// Element 128h + 32k + l is bits 2k of qs[32h + l]; sub-block of 16 j has its 4-bit scale and min in
// scales[j]. Bit-exact with dequantize_row_q2_k (ggml-lite/src/quants/k_quants_low.cpp). Blocks
// are 84 bytes: 32-bit reads.
// GEMV chunk: one qs word (h, l = 4g .. 4g + 3) holds all four k: 16 elements in four runs of 4.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "block_io.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q2_k.h"

namespace gl::cuda {

template <>
struct QuantTraits<DType::Q2_K> {
  static constexpr DType kType = DType::Q2_K;
  static constexpr int kBlock = kQ2_KBlock;
  static constexpr int kBlockBytes = static_cast<int>(sizeof(BlockQ2_K));
  static constexpr int kAlign = 4;
  static constexpr int kScales = static_cast<int>(offsetof(BlockQ2_K, scales));
  static constexpr int kQs = static_cast<int>(offsetof(BlockQ2_K, qs));
  static constexpr int kD = static_cast<int>(offsetof(BlockQ2_K, d));  // d, then dmin
  static_assert(kBlockBytes % 4 == 0 && kQs % 4 == 0 && kD % 4 == 0 && kScales % 4 == 0, "32-bit reads");

  __device__ static float elem(const char* blk, int i) {
    const uint32_t dm = qio::ld32<4>(blk + kD);
    const uint32_t sc = qio::ld8(blk + kScales + i / 16);
    const float dl = __fmul_rn(qio::f16(dm), qio::to_f(static_cast<int>(sc & 0xFu)));
    const float ml = __fmul_rn(qio::f16(dm >> 16), qio::to_f(static_cast<int>(sc >> 4)));
    const uint32_t q = (qio::ld8(blk + kQs + 32 * (i >> 7) + (i & 31)) >> (2 * ((i >> 5) & 3))) & 3u;
    return __fsub_rn(__fmul_rn(dl, qio::to_f(static_cast<int>(q))), ml);
  }
  // Elements 2p and 2p+1 (same sub-block), each rounded to half once (the cuBLAS weight tiles).
  __device__ static __half2 pair_f16(const char* blk, int p) {
    return __floats2half2_rn(elem(blk, 2 * p), elem(blk, 2 * p + 1));
  }

  // GEMV (matmul_gemv.cu): chunk c is piece w = c % 16 of block c / 16: h = w / 8, g = w % 8; run k
  // holds elements 128h + 32k + 4g .. + 3 (sub-block 8h + 2k + g / 4).
  static constexpr int kChunk = 16;
  static constexpr int kRuns = 4;
  __device__ static int64_t run_start(int64_t c, int r) {
    const int w = static_cast<int>(c & 15);
    return (c >> 4) * kBlock + 128 * (w >> 3) + 32 * r + 4 * (w & 7);
  }
  struct Chunk {
    uint32_t q;   // bits 2k of byte e: element e of run k
    uint32_t sc;  // byte k: scale (low nibble) and min (high nibble) of run k
    float d, dmin;
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 4) * int64_t{kBlockBytes};
    const int w = static_cast<int>(c & 15), h = w >> 3, g = w & 7;
    out.q = qio::ld32<4>(blk + kQs + 32 * h + 4 * g);
    // Scale bytes 8h + g / 4 + 2k, k = 0..3, out of the two words at 8h.
    const uint32_t s0 = qio::ld32<4>(blk + kScales + 8 * h), s1 = qio::ld32<4>(blk + kScales + 8 * h + 4);
    const int o = g >> 2;
    out.sc = qio::byte_of(s0, o) | (qio::byte_of(s0, o + 2) << 8) | (qio::byte_of(s1, o) << 16) |
             (qio::byte_of(s1, o + 2) << 24);
    const uint32_t dm = qio::ld32<4>(blk + kD);
    out.d = qio::f16(dm);
    out.dmin = qio::f16(dm >> 16);
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float s = 0.0f, sx = 0.0f;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint32_t q = (qio::byte_of(w.q, e) >> (2 * k)) & 3u;
        s = fmaf(qio::to_f(static_cast<int>(q)), x[4 * k + e], s);
        sx += x[4 * k + e];
      }
      const uint32_t sc = qio::byte_of(w.sc, k);
      acc = fmaf(w.d * qio::to_f(static_cast<int>(sc & 0xFu)), s, acc);
      acc = fmaf(-w.dmin * qio::to_f(static_cast<int>(sc >> 4)), sx, acc);
    }
    return acc;
  }
};

}  // namespace gl::cuda
