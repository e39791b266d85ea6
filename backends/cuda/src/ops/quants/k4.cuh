// quants/k4.cuh - device traits shared by Q4_K and Q5_K: 256 elements in 8 sub-blocks of 32, a
// 6-bit scale and min per sub-block (12 packed bytes) against the fp16 factors d and dmin.
//
//   template <> struct QuantTraits<DType::Q4_K> : KBlock4<Q4_KLayout> {};  // quants/q4_k.cuh
//
// Element 64c + l (l < 32) is the low nibble of qs[32c + l] and element 64c + 32 + l its high
// nibble; Q5_K adds bit 2c (resp. 2c + 1) of qh[l] as the fifth bit. y = (d * sc) * q - dmin * m,
// evaluated in that order with explicit rounding (the reference's k4_factors, then one product
// and one difference), so it is bit-exact.
// GEMV chunk: 8 quant bytes qs[32c + 8g ..] (16 elements: two runs of 8, sub-blocks 2c and 2c + 1);
// the dot is d0 * sum(q x) - m0 * sum(x) per run. Blocks are 144 / 176 bytes: 32-bit reads.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "block_io.cuh"

namespace gl::cuda {

// Byte k (0..11) of the packed scales, held as three words.
__device__ __forceinline__ uint32_t k4_scale_byte(const uint32_t (&s)[3], int k) {
  return qio::byte_of(s[k >> 2], k & 3);
}

// 6-bit scale ls and min lm of sub-block j (the reference's unpack_scale_min_k4).
__device__ __forceinline__ void k4_scale_min(const uint32_t (&s)[3], int j, int& ls, int& lm) {
  if (j < 4) {
    ls = static_cast<int>(k4_scale_byte(s, j) & 63u);
    lm = static_cast<int>(k4_scale_byte(s, j + 4) & 63u);
  } else {
    ls = static_cast<int>((k4_scale_byte(s, j + 4) & 0xFu) | ((k4_scale_byte(s, j - 4) >> 6) << 4));
    lm = static_cast<int>((k4_scale_byte(s, j + 4) >> 4) | ((k4_scale_byte(s, j) >> 6) << 4));
  }
}

template <class L>
struct KBlock4 {
  static constexpr DType kType = L::kType;
  static constexpr int kBlock = 256;
  static constexpr int kBlockBytes = L::kBytes;
  static constexpr int kAlign = 4;

  struct Factors {
    float d, m;  // sub-block scale d * sc and min dmin * m
  };
  __device__ static Factors factors(const char* blk, int j) {
    const uint32_t dm = qio::ld32<4>(blk);
    const uint32_t s[3] = {qio::ld32<4>(blk + 4), qio::ld32<4>(blk + 8), qio::ld32<4>(blk + 12)};
    int ls, lm;
    k4_scale_min(s, j, ls, lm);
    return {__fmul_rn(qio::f16(dm), qio::to_f(ls)), __fmul_rn(qio::f16(dm >> 16), qio::to_f(lm))};
  }

  __device__ static float elem(const char* blk, int i) {
    const int c = i >> 6, hi = (i >> 5) & 1, l = i & 31;
    const uint32_t byte = qio::ld8(blk + L::kQs + 32 * c + l);
    int q = static_cast<int>(hi ? byte >> 4 : byte & 0xFu);
    if constexpr (L::kHighBits) q |= static_cast<int>((qio::ld8(blk + L::kQh + l) >> (2 * c + hi)) & 1u) << 4;
    const Factors f = factors(blk, 2 * c + hi);
    return __fsub_rn(__fmul_rn(f.d, qio::to_f(q)), f.m);
  }
  // Elements 2p and 2p+1 (same sub-block), each rounded to half once (the cuBLAS weight tiles).
  __device__ static __half2 pair_f16(const char* blk, int p) {
    return __floats2half2_rn(elem(blk, 2 * p), elem(blk, 2 * p + 1));
  }

  // GEMV (matmul_gemv.cu): chunk c is piece w = c % 16 of block c / 16, c4 = w / 4, g = w % 4.
  static constexpr int kChunk = 16;
  static constexpr int kRuns = 2;
  __device__ static int64_t run_start(int64_t c, int r) {
    const int w = static_cast<int>(c & 15);
    return (c >> 4) * kBlock + 64 * (w >> 2) + 8 * (w & 3) + 32 * r;
  }
  struct Chunk {
    uint32_t q[2];   // quant bytes: low nibbles run 0, high nibbles run 1
    uint32_t hb[2];  // Q5_K: the qh bytes shifted so bit 0 / bit 1 of byte e are the fifth bits
    Factors f[2];    // per run
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 4) * int64_t{kBlockBytes};
    const int w = static_cast<int>(c & 15), c4 = w >> 2, g = w & 3;
    const uint32_t dm = qio::ld32<4>(blk);
    const uint32_t s[3] = {qio::ld32<4>(blk + 4), qio::ld32<4>(blk + 8), qio::ld32<4>(blk + 12)};
    const char* qs = blk + L::kQs + 32 * c4 + 8 * g;
    out.q[0] = qio::ld32<4>(qs);
    out.q[1] = qio::ld32<4>(qs + 4);
    if constexpr (L::kHighBits) {
      const char* qh = blk + L::kQh + 8 * g;
      out.hb[0] = (qio::ld32<4>(qh) >> (2 * c4)) & 0x03030303u;
      out.hb[1] = (qio::ld32<4>(qh + 4) >> (2 * c4)) & 0x03030303u;
    } else {
      out.hb[0] = out.hb[1] = 0u;
    }
    const float d = qio::f16(dm), dmin = qio::f16(dm >> 16);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      int ls, lm;
      k4_scale_min(s, 2 * c4 + r, ls, lm);
      out.f[r] = {d * qio::to_f(ls), dmin * qio::to_f(lm)};
    }
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s0 = 0.0f, s1 = 0.0f, x0 = 0.0f, x1 = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t byte = qio::byte_of(w.q[e >> 2], e & 3);
      uint32_t lo = byte & 0xFu, hi = byte >> 4;
      if constexpr (L::kHighBits) {
        const uint32_t h = qio::byte_of(w.hb[e >> 2], e & 3);
        lo |= (h & 1u) << 4;
        hi |= (h & 2u) << 3;
      }
      s0 = fmaf(qio::to_f(static_cast<int>(lo)), x[e], s0);
      s1 = fmaf(qio::to_f(static_cast<int>(hi)), x[8 + e], s1);
      x0 += x[e];
      x1 += x[8 + e];
    }
    acc = fmaf(w.f[0].d, s0, acc);
    acc = fmaf(-w.f[0].m, x0, acc);
    acc = fmaf(w.f[1].d, s1, acc);
    return fmaf(-w.f[1].m, x1, acc);
  }
};

}  // namespace gl::cuda
