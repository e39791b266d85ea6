// quants/q3_k.cuh - Q3_K on CUDA: QuantTraits<DType::Q3_K>, the device side of ggml-lite/quants/q3_k.h.
//
//   using Q = QuantTraits<DType::Q3_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * q
//
// Element i = 128h + 32k + l: low 2 bits at bits 2k of qs[32h + l], and q = those - 4 unless bit
// i / 32 of hmask[l] is set; a signed 6-bit scale per 16 elements (12 packed bytes). Bit-exact
// with dequantize_row_q3_k (ggml-lite/src/quants/k_quants_low.cpp). Blocks are 110 bytes, so only
// 2-byte alignment holds.
// GEMV chunk: one qs word and one hmask word (h, l = 4g .. 4g + 3): 16 elements in four runs of 4.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "block_io.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q3_k.h"

namespace gl::cuda {

template <>
struct QuantTraits<DType::Q3_K> {
  static constexpr DType kType = DType::Q3_K;
  static constexpr int kBlock = kQ3_KBlock;
  static constexpr int kBlockBytes = static_cast<int>(sizeof(BlockQ3_K));
  static constexpr int kAlign = 2;
  static constexpr int kHmask = static_cast<int>(offsetof(BlockQ3_K, hmask));
  static constexpr int kQs = static_cast<int>(offsetof(BlockQ3_K, qs));
  static constexpr int kScales = static_cast<int>(offsetof(BlockQ3_K, scales));
  static constexpr int kD = static_cast<int>(offsetof(BlockQ3_K, d));
  static_assert(kHmask % 4 == 0 && kQs % 4 == 0 && kScales % 4 == 0 && kD % 2 == 0, "2-byte aligned reads");

  // Signed scale of sub-block j from the 12 scale bytes s (the reference's q3_scale).
  __device__ static int scale(const uint32_t (&s)[3], int j) {
    const uint32_t lo = j < 8 ? qio::byte_of(s[j >> 2], j & 3) & 0xFu : qio::byte_of(s[(j - 8) >> 2], j & 3) >> 4;
    const uint32_t hi = (qio::byte_of(s[2], j & 3) >> (2 * (j >> 2))) & 3u;
    return static_cast<int>(lo | (hi << 4)) - 32;
  }
  __device__ static void load_scales(const char* blk, uint32_t (&s)[3]) {
    for (int w = 0; w < 3; ++w) s[w] = qio::ld32<2>(blk + kScales + 4 * w);
  }

  __device__ static float elem(const char* blk, int i) {
    uint32_t s[3];
    load_scales(blk, s);
    const float dl = __fmul_rn(qio::f16(qio::ld16(blk + kD)), qio::to_f(scale(s, i / 16)));
    const int l = i & 31;
    const int low = static_cast<int>((qio::ld8(blk + kQs + 32 * (i >> 7) + l) >> (2 * ((i >> 5) & 3))) & 3u);
    const bool high = ((qio::ld8(blk + kHmask + l) >> (i >> 5)) & 1u) != 0;
    return __fmul_rn(dl, qio::to_f(low - (high ? 0 : 4)));
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
    uint32_t q;   // bits 2k of byte e: low bits of element e of run k
    uint32_t hm;  // bit k of byte e: its high bit
    uint32_t sc;  // byte k: the signed scale of run k
    float d;
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 4) * int64_t{kBlockBytes};
    const int w = static_cast<int>(c & 15), h = w >> 3, g = w & 7;
    out.q = qio::ld32<2>(blk + kQs + 32 * h + 4 * g);
    out.hm = (qio::ld32<2>(blk + kHmask + 4 * g) >> (4 * h)) & 0x0f0f0f0fu;
    uint32_t s[3];
    load_scales(blk, s);
    out.sc = 0u;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      out.sc |= (static_cast<uint32_t>(scale(s, 8 * h + 2 * k + (g >> 2))) & 0xffu) << (8 * k);
    out.d = qio::f16(qio::ld16(blk + kD));
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float s = 0.0f;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int low = static_cast<int>((qio::byte_of(w.q, e) >> (2 * k)) & 3u);
        const int high = static_cast<int>((qio::byte_of(w.hm, e) >> k) & 1u);
        s = fmaf(qio::to_f(low - 4 + 4 * high), x[4 * k + e], s);
      }
      const int sc = static_cast<int8_t>(qio::byte_of(w.sc, k));
      acc = fmaf(w.d * qio::to_f(sc), s, acc);
    }
    return acc;
  }
};

}  // namespace gl::cuda
