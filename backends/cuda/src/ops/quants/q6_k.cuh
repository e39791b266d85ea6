// quants/q6_k.cuh - Q6_K on CUDA: QuantTraits<DType::Q6_K>, the device side of ggml-lite/quants/q6_k.h.
//
//   using Q = QuantTraits<DType::Q6_K>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // (d * sc) * (q - 32)
//
// Element 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l] (low nibble for k < 2), high 2 bits
// at bits 2k of qh[32h + l], int8 scale per 16 elements. Bit-exact with dequantize_row_q6_k
// (ggml-lite/src/quants/k_quants.cpp). Blocks are 210 bytes, so only 2-byte alignment holds.
// GEMV chunk: for one h and eight l (8g .. 8g + 7), the ql and qh bytes that hold all four k:
// 32 elements in four runs of 8, every byte read once.
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
  // Levels i + 4w .. i + 4w + 3 (i a multiple of 16), a byte each, from the ql and qh bytes read a
  // word at a time (values16, halves16).
  template <class Src>
  __device__ static uint32_t levels4(const char* blk, int i, int w) {
    const int h = i >> 7, k = (i >> 5) & 3, l = i & 31;
    const uint32_t lo = qio::ld32<2, Src>(blk + kQl + 64 * h + 32 * (k & 1) + l + 4 * w);
    const uint32_t hb = qio::ld32<2, Src>(blk + kQh + 32 * h + l + 4 * w);
    return ((k < 2 ? lo : lo >> 4) & 0x0F0F0F0Fu) | (((hb >> (2 * k)) & 0x03030303u) << 4);
  }
  // Elements i .. i + 15 (i a multiple of 16: one scale) as elem() gives them, for the MoE
  // tensor-core tiles (matmul_id_mma.cu): d and the scale once, the ql and qh bytes a word at a time.
  // Src: the block in global memory or staged in shared memory.
  template <class Src = qio::FromGlobal>
  __device__ static void values16(const char* blk, int i, float (&v)[16]) {
    const float d = qio::f16(qio::ld16<Src>(blk + kD));
    const float ds = __fmul_rn(d, qio::to_f(static_cast<int8_t>(qio::ld8<Src>(blk + kScales + i / 16))));
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q = levels4<Src>(blk, i, w);
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * w + e] = __fmul_rn(ds, qio::byte_f(q, e) - 32.0f);
    }
  }

  // values16's elements for the tiles under Precision::FAST, as 8 half2 (bits): the level minus 32
  // exact in half, times d * scale rounded to half (error at most about 2 * 2^-11 |w|).
  template <class Src = qio::FromGlobal>
  __device__ static void halves16(const char* blk, int i, uint32_t (&h)[8]) {
    const float d = qio::f16(qio::ld16<Src>(blk + kD));
    const __half2 ds =
        __float2half2_rn(__fmul_rn(d, qio::to_f(static_cast<int8_t>(qio::ld8<Src>(blk + kScales + i / 16)))));
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q = levels4<Src>(blk, i, w);
#pragma unroll
      for (int p = 0; p < 2; ++p) h[2 * w + p] = qio::h2_bits(__hmul2(qio::level_pair_h2<32>(q, p), ds));
    }
  }

  // GEMV (matmul_gemv.cu): chunk c is piece p = c % 8 of block c / 8: h = p / 4, g = p % 4; run k
  // holds elements 128h + 32k + 8g .. + 7. Its bytes: ql[64h + 8g ..] (runs 0 and 2) and
  // ql[64h + 32 + 8g ..] (runs 1 and 3), 8 each, qh[32h + 8g ..] (8), four scales and d. Blocks are
  // 210 bytes (2-byte aligned): the 8-byte groups are read as aligned words and funnel-shifted.
  static constexpr int kChunk = 32;
  static constexpr int kRuns = 4;
  static constexpr int kGemvRows = 4;         // weight rows per GEMV block (matmul_gemv.cu)
  static constexpr bool kChunkValues = true;  // chunk_values() below (the cuBLAS tiles, matmul.cu)
  __device__ static int64_t run_start(int64_t c, int r) {
    const int p = static_cast<int>(c & 7);
    return (c >> 3) * kBlock + 128 * (p >> 2) + 32 * r + 8 * (p & 3);
  }
  struct Chunk {
    uint32_t ql[2][2];  // [0]: ql for runs 0 (low nibbles) and 2 (high); [1]: runs 1 and 3
    uint32_t qh[2];     // bits 2k of byte e: high bits of run k
    float d[4];         // d * scale of run k
  };
  template <class Src = qio::FromGlobal>
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out, bool) {
    const char* blk = row + (c >> 3) * int64_t{kBlockBytes};
    const int p = static_cast<int>(c & 7), h = p >> 2, g = p & 3;
    qio::ld64_a2<Src>(blk + kQl + 64 * h + 8 * g, out.ql[0]);
    qio::ld64_a2<Src>(blk + kQl + 64 * h + 32 + 8 * g, out.ql[1]);
    qio::ld64_a2<Src>(blk + kQh + 32 * h + 8 * g, out.qh);
    const float d = qio::f16(qio::ld16<Src>(blk + kD));
    const char* sc = blk + kScales + 8 * h + (g >> 1);  // scale of run k: sc[2k]
#pragma unroll
    for (int k = 0; k < 4; ++k) out.d[k] = d * qio::to_f(static_cast<int8_t>(qio::ld8<Src>(sc + 2 * k)));
  }
  // Levels (0..63) of word i of the chunk: byte e of q[k] is element 8k + 4i + e.
  __device__ static void levels(const Chunk& w, int i, uint32_t (&q)[4]) {
    const uint32_t a = w.ql[0][i], b = w.ql[1][i], hb = w.qh[i];
    q[0] = (a & 0x0F0F0F0Fu) | ((hb << 4) & 0x30303030u);
    q[1] = (b & 0x0F0F0F0Fu) | ((hb << 2) & 0x30303030u);
    q[2] = ((a >> 4) & 0x0F0F0F0Fu) | (hb & 0x30303030u);
    q[3] = ((b >> 4) & 0x0F0F0F0Fu) | ((hb >> 2) & 0x30303030u);
  }
  // The chunk's elements as elem() gives them, bit for bit: run k element e is y[8 k + e].
  __device__ static void chunk_values(const Chunk& w, float (&y)[kChunk]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      uint32_t q[4];
      levels(w, i, q);
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) y[8 * k + 4 * i + e] = __fmul_rn(w.d[k], qio::byte_f(q[k], e) - 32.0f);
    }
  }
  // sum over run k of d_k (q - 32) x = d_k (sum(q x) - 32 sum(x)).
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      uint32_t q[4];
      levels(w, i, q);
#pragma unroll
      for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[k] = fmaf(qio::byte_f(q[k], e), x[8 * k + 4 * i + e], s[k]);
          xs[k] += x[8 * k + 4 * i + e];
        }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) acc = fmaf(w.d[k], fmaf(-32.0f, xs[k], s[k]), acc);
    return acc;
  }
  // The same against int8 activations (matmul_gemv_q8.cu, Precision::FAST): run k's 8 quants in
  // words 2k, 2k + 1 of xq, dx[k] the scale of the 32-element activation block that holds run k.
  // Per run d_k dx_k (sum(q xq) - 32 sum(xq)), the integer part exact (dp4a).
  __device__ static float dot_q8(const Chunk& w, const int (&xq)[8], const float (&dx)[4], float acc) {
    int s[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      uint32_t q[4];
      levels(w, i, q);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        s[k] = __dp4a(static_cast<int>(q[k]), xq[2 * k + i], s[k]);
        s[k] = __dp4a(static_cast<int>(0xE0E0E0E0u), xq[2 * k + i], s[k]);  // bytes of -32
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) acc = fmaf(w.d[k] * dx[k], qio::to_f(s[k]), acc);
    return acc;
  }
};

}  // namespace gl::cuda
