// quants/q6_k.cuh - Q6_K on CUDA: QuantTraits<DType::Q6_K>, the device side of ggml-lite/quants/q6_k.h.
//
//   using Q = QuantTraits<DType::Q6_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * (q - 32)
//
// Element 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l] (low nibble for k < 2), high 2 bits
// at bits 2k of qh[32h + l], int8 scale per 16 elements. Bit-exact with dequantize_row_q6_k
// (ggml-lite/src/quants/k_quants.cpp). Blocks are 210 bytes, so only 2-byte alignment holds.
// GEMV chunk: for one h and four l (4g .. 4g + 3), the two ql words and the qh word that hold all
// four k: 16 elements in four runs of 4, every byte read once.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "block_io.cuh"
#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q6_k.h"

namespace gl::cuda {

template <>
struct QuantTraits<DType::Q6_K> {
  static constexpr DType kType = DType::Q6_K;
  static constexpr int kBlock = kQ6_KBlock;
  static constexpr int kBlockBytes = static_cast<int>(sizeof(BlockQ6_K));
  static constexpr int kAlign = 2;
  static constexpr int kQl = static_cast<int>(offsetof(BlockQ6_K, ql));
  static constexpr int kQh = static_cast<int>(offsetof(BlockQ6_K, qh));
  static constexpr int kScales = static_cast<int>(offsetof(BlockQ6_K, scales));
  static constexpr int kD = static_cast<int>(offsetof(BlockQ6_K, d));
  static_assert(kQl % 4 == 0 && kQh % 4 == 0 && kD % 2 == 0, "4-byte groups stay 2-byte aligned");

  // Level (0..63) of element i = 128h + 32k + l.
  __device__ static int level(const char* blk, int i) {
    const int h = i >> 7, k = (i >> 5) & 3, l = i & 31;
    const uint32_t lo_byte = qio::ld8(blk + kQl + 64 * h + 32 * (k & 1) + l);
    const uint32_t lo = k < 2 ? lo_byte & 0xFu : lo_byte >> 4;
    const uint32_t hi = (qio::ld8(blk + kQh + 32 * h + l) >> (2 * k)) & 3u;
    return static_cast<int>(lo | (hi << 4));
  }
  __device__ static float elem(const char* blk, int i) {
    const float d = qio::f16(qio::ld16(blk + kD));
    const int sc = static_cast<int8_t>(qio::ld8(blk + kScales + i / 16));
    return __fmul_rn(__fmul_rn(d, qio::to_f(sc)), qio::to_f(level(blk, i) - 32));
  }
  // Elements 2p and 2p+1 (same sub-block), each rounded to half once (the cuBLAS weight tiles).
  __device__ static __half2 pair_f16(const char* blk, int p) {
    return __floats2half2_rn(elem(blk, 2 * p), elem(blk, 2 * p + 1));
  }

  // GEMV (matmul_gemv.cu): chunk c is piece w = c % 16 of block c / 16: h = w / 8, g = w % 8; run k
  // holds elements 128h + 32k + 4g .. + 3.
  static constexpr int kChunk = 16;
  static constexpr int kRuns = 4;
  __device__ static int64_t run_start(int64_t c, int r) {
    const int w = static_cast<int>(c & 15);
    return (c >> 4) * kBlock + 128 * (w >> 3) + 32 * r + 4 * (w & 7);
  }
  struct Chunk {
    uint32_t ql[2];  // ql bytes for k = 0, 2 (low, high nibbles) and k = 1, 3
    uint32_t qh;     // bits 2k of byte e: high bits of run k, element e
    uint32_t sc;     // byte k: the int8 scale of run k
    float d;
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 4) * int64_t{kBlockBytes};
    const int w = static_cast<int>(c & 15), h = w >> 3, g = w & 7;
    out.ql[0] = qio::ld32<2>(blk + kQl + 64 * h + 4 * g);
    out.ql[1] = qio::ld32<2>(blk + kQl + 64 * h + 32 + 4 * g);
    out.qh = qio::ld32<2>(blk + kQh + 32 * h + 4 * g);
    const char* sc = blk + kScales + 8 * h + (g >> 2);  // scale of run k: sc[2k]
    out.sc = qio::ld8(sc) | (qio::ld8(sc + 2) << 8) | (qio::ld8(sc + 4) << 16) | (qio::ld8(sc + 6) << 24);
    out.d = qio::f16(qio::ld16(blk + kD));
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float s = 0.0f;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint32_t byte = qio::byte_of(w.ql[k & 1], e);
        const uint32_t lo = k < 2 ? byte & 0xFu : byte >> 4;
        const uint32_t hi = (qio::byte_of(w.qh, e) >> (2 * k)) & 3u;
        s = fmaf(qio::to_f(static_cast<int>(lo | (hi << 4)) - 32), x[4 * k + e], s);
      }
      const int sc = static_cast<int8_t>(qio::byte_of(w.sc, k));
      acc = fmaf(w.d * qio::to_f(sc), s, acc);
    }
    return acc;
  }
};

}  // namespace gl::cuda
