// quants/k4.cuh - device traits shared by Q4_K and Q5_K: 256 elements in 8 sub-blocks of 32, a
// 6-bit scale and min per sub-block (12 packed bytes) against the fp16 factors d and dmin.
//
//   template <> struct QuantTraits<DType::Q4_K> : KBlock4<Q4_KLayout> {};  // quants/q4_k.cuh
//
// Element 64c + l (l < 32) is the low nibble of qs[32c + l] and element 64c + 32 + l its high
// nibble; Q5_K adds bit 2c (resp. 2c + 1) of qh[l] as the fifth bit. y = (d * sc) * q - dmin * m,
// evaluated in that order with explicit rounding (the reference's k4_factors, then one product
// and one difference), so it is bit-exact.
// GEMV chunk: 16 quant bytes qs[32c + 16h ..] (32 elements: two runs of 16, sub-blocks 2c and
// 2c + 1); the dot is d0 * sum(q x) - m0 * sum(x) per run. Blocks are 144 / 176 bytes: 16-byte reads.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "block_io.cuh"

namespace gl::cuda {

// Byte k (0..11) of the packed scales, held as three words.
// (The word is selected, not indexed: a dynamic index would put s in local memory, which ncu
// showed as spills in the Q4_K GEMVs, where the sub-block comes from the chunk number.)
__device__ __forceinline__ uint32_t k4_scale_byte(const uint32_t (&s)[3], int k) {
  const uint32_t w = k < 4 ? s[0] : k < 8 ? s[1] : s[2];
  return qio::byte_of(w, k & 3);
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
  template <class Src = qio::FromGlobal>
  __device__ static Factors factors(const char* blk, int j) {
    const uint32_t dm = qio::ld32<4, Src>(blk);
    const uint32_t s[3] = {qio::ld32<4, Src>(blk + 4), qio::ld32<4, Src>(blk + 8), qio::ld32<4, Src>(blk + 12)};
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
  // Levels i + 4w .. i + 4w + 3 (i a multiple of 16), a byte each: the quant nibbles and Q5_K's
  // fifth bits, read a word at a time (values16, halves16).
  template <class Src>
  __device__ static uint32_t levels4(const char* blk, int i, int w) {
    const int c = i >> 6, hi = (i >> 5) & 1, o = i & 31;
    const uint32_t b = qio::ld32<4, Src>(blk + L::kQs + 32 * c + o + 4 * w);
    uint32_t q = (hi ? b >> 4 : b) & 0x0F0F0F0Fu;
    if constexpr (L::kHighBits) q |= ((qio::ld32<4, Src>(blk + L::kQh + o + 4 * w) >> (2 * c + hi)) & 0x01010101u) << 4;
    return q;
  }
  // Elements i .. i + 15 (i a multiple of 16: half a sub-block) as elem() gives them, for the MoE
  // tensor-core tiles (matmul_id_mma.cu): the sub-block's factors once, its quant bytes (and Q5_K's
  // fifth bits) a word at a time, instead of the header re-read for every element. Src: the block
  // in global memory or staged in shared memory.
  template <class Src = qio::FromGlobal>
  __device__ static void values16(const char* blk, int i, float (&v)[16]) {
    const Factors f = factors<Src>(blk, 2 * (i >> 6) + ((i >> 5) & 1));
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q = levels4<Src>(blk, i, w);
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * w + e] = __fsub_rn(__fmul_rn(f.d, qio::byte_f(q, e)), f.m);
    }
  }

  // values16's elements for the tiles under Precision::FAST, as 8 half2 (bits), in half arithmetic:
  // the level exact, then one fma with the sub-block's scale and min each rounded to half. Per
  // element the error is at most about 2^-11 (|d q| + |m|) + 2^-11 |w|, against values16's one
  // rounding of the exact value to half (2^-11 |w|).
  template <class Src = qio::FromGlobal>
  __device__ static void halves16(const char* blk, int i, uint32_t (&h)[8]) {
    const Factors f = factors<Src>(blk, 2 * (i >> 6) + ((i >> 5) & 1));
    const __half2 d2 = __float2half2_rn(f.d), m2 = __float2half2_rn(-f.m);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q = levels4<Src>(blk, i, w);
#pragma unroll
      for (int p = 0; p < 2; ++p) h[2 * w + p] = qio::h2_bits(__hfma2(qio::level_pair_h2<0>(q, p), d2, m2));
    }
  }

  // GEMV (matmul_gemv.cu): chunk c is piece p = c % 8 of block c / 8, c4 = p / 2, half = p % 2: the
  // 16 quant bytes qs[32 c4 + 16 half ..], one 16-byte load (blocks are 144 / 176 bytes, so rows
  // keep the tensor's 16-byte alignment), whose low nibbles are run 0 (sub-block 2 c4) and high
  // nibbles run 1 (sub-block 2 c4 + 1). The header (d, dmin, scales) is one more 16-byte load,
  // shared in L1 by the block's 8 pieces. Loaded this way a chunk costs 2-3 loads per 32 elements
  // instead of 6 per 16 (measured: 9B Q4_K_M GEMVs at 12-20% of the copy bandwidth before).
  static constexpr int kChunk = 32;
  static constexpr int kRuns = 2;
  static constexpr int kGemvRows = 4;         // weight rows per GEMV block (matmul_gemv.cu)
  static constexpr bool kChunkValues = true;  // chunk_values() below (the cuBLAS tiles, matmul.cu)
  __device__ static int64_t run_start(int64_t c, int r) {
    const int p = static_cast<int>(c & 7);
    return (c >> 3) * kBlock + 64 * (p >> 1) + 16 * (p & 1) + 32 * r;
  }
  struct Chunk {
    uint32_t q[4];   // quant bytes: low nibbles run 0, high nibbles run 1
    uint32_t hb[4];  // Q5_K: the qh bytes shifted so bit 0 / bit 1 of byte e are the fifth bits
    Factors f[2];    // per run
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out, bool vec) {
    const char* blk = row + (c >> 3) * int64_t{kBlockBytes};
    const int p = static_cast<int>(c & 7), c4 = p >> 1, half = p & 1;
    uint32_t hdr[4];  // d | dmin << 16, then the 12 scale bytes
    qio::ld128(blk, vec, hdr);
    qio::ld128(blk + L::kQs + 32 * c4 + 16 * half, vec, out.q);
    if constexpr (L::kHighBits) {
      qio::ld128(blk + L::kQh + 16 * half, vec, out.hb);
#pragma unroll
      for (int i = 0; i < 4; ++i) out.hb[i] = (out.hb[i] >> (2 * c4)) & 0x03030303u;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) out.hb[i] = 0u;
    }
    const uint32_t s[3] = {hdr[1], hdr[2], hdr[3]};
    const float d = qio::f16(hdr[0]), dmin = qio::f16(hdr[0] >> 16);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      int ls, lm;
      k4_scale_min(s, 2 * c4 + r, ls, lm);
      out.f[r] = {d * qio::to_f(ls), dmin * qio::to_f(lm)};
    }
  }
  // Quants of word i of the chunk: bytes of lo (run 0) and hi (run 1).
  __device__ static void quants(const Chunk& w, int i, uint32_t& lo, uint32_t& hi) {
    lo = w.q[i] & 0x0F0F0F0Fu;
    hi = (w.q[i] >> 4) & 0x0F0F0F0Fu;
    if constexpr (L::kHighBits) {
      lo |= (w.hb[i] & 0x01010101u) << 4;
      hi |= (w.hb[i] & 0x02020202u) << 3;
    }
  }
  // The chunk's elements as elem() gives them, bit for bit: run r element e is y[16 r + e].
  __device__ static void chunk_values(const Chunk& w, float (&y)[kChunk]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo, hi;
      quants(w, i, lo, hi);
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        y[4 * i + b] = __fsub_rn(__fmul_rn(w.f[0].d, qio::byte_f(lo, b)), w.f[0].m);
        y[16 + 4 * i + b] = __fsub_rn(__fmul_rn(w.f[1].d, qio::byte_f(hi, b)), w.f[1].m);
      }
    }
  }
  // sum over the chunk of y x = d_r sum(q x) - m_r sum(x) per run.
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s0 = 0.0f, s1 = 0.0f, x0 = 0.0f, x1 = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo, hi;
      quants(w, i, lo, hi);
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        s0 = fmaf(qio::byte_f(lo, b), x[4 * i + b], s0);
        s1 = fmaf(qio::byte_f(hi, b), x[16 + 4 * i + b], s1);
        x0 += x[4 * i + b];
        x1 += x[16 + 4 * i + b];
      }
    }
    acc = fmaf(w.f[0].d, s0, acc);
    acc = fmaf(-w.f[0].m, x0, acc);
    acc = fmaf(w.f[1].d, s1, acc);
    return fmaf(-w.f[1].m, x1, acc);
  }
  // The same against int8 activations (matmul_gemv_q8.cu, Precision::FAST): xq holds run r's 16
  // quants in words 4r .. 4r + 3 and dx[r] is the scale of the 32-element activation block that
  // holds run r. Per run d dx sum(q xq) - m dx sum(xq), the integer sums exact (dp4a).
  __device__ static float dot_q8(const Chunk& w, const int (&xq)[8], const float (&dx)[2], float acc) {
    int s0 = 0, s1 = 0, z0 = 0, z1 = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo, hi;
      quants(w, i, lo, hi);
      s0 = __dp4a(static_cast<int>(lo), xq[i], s0);
      s1 = __dp4a(static_cast<int>(hi), xq[4 + i], s1);
      z0 = __dp4a(0x01010101, xq[i], z0);
      z1 = __dp4a(0x01010101, xq[4 + i], z1);
    }
    acc = fmaf(w.f[0].d * dx[0], qio::to_f(s0), acc);
    acc = fmaf(-w.f[0].m * dx[0], qio::to_f(z0), acc);
    acc = fmaf(w.f[1].d * dx[1], qio::to_f(s1), acc);
    return fmaf(-w.f[1].m * dx[1], qio::to_f(z1), acc);
  }

  // The int8 GEMV's chunk (matmul_gemv_q8.cu, gemv_kernel.cuh's WChunkQ8): a whole 32-byte quant
  // group c4 = c % 4 of block c / 4, 64 elements, whose low nibbles are sub-block 2 c4 (run 0) and
  // high nibbles sub-block 2 c4 + 1 (run 1), each one whole 32-element activation block. A
  // sub-block's scale and min are decoded once instead of once per half: ncu had the 32-element
  // chunks issue-bound (about 75 instructions per 16 quant bytes, Q4_K GEMVs at 1.0-1.5 TB/s).
  // load_chunk only loads; ready() decodes the header, and dot_q8 Q5_K's fifth bits, so that a
  // GEMV issues all of a group's loads before any decode waits on them (s24: a decode inside the
  // then pipelined GEMV's prefetch branch made every row group wait for its own loads).
  struct Q8Wide {
    static constexpr int kChunk = 64;
    static constexpr int kRuns = 2;
    __device__ static int64_t run_start(int64_t c, int r) { return (c >> 2) * kBlock + 64 * (c & 3) + 32 * r; }
    struct Chunk {
      uint32_t q[8];    // quant bytes: low nibbles run 0, high nibbles run 1
      uint32_t qh[8];   // Q5_K: the qh words as loaded (fifth bits 2 c4 and 2 c4 + 1 of each byte)
      uint32_t hdr[4];  // d | dmin << 16, then the 12 scale bytes
      int c4;
      Factors f[2];  // per run, from hdr (ready)
    };
    template <class Src = qio::FromGlobal>
    __device__ static void load_chunk(const char* row, int64_t c, Chunk& out, bool vec) {
      const char* blk = row + (c >> 2) * int64_t{kBlockBytes};
      const int c4 = static_cast<int>(c & 3);
      uint32_t a[4], b[4];
      qio::ld128<Src>(blk, vec, out.hdr);
      qio::ld128<Src>(blk + L::kQs + 32 * c4, vec, a);
      qio::ld128<Src>(blk + L::kQs + 32 * c4 + 16, vec, b);
#pragma unroll
      for (int i = 0; i < 4; ++i) out.q[i] = a[i], out.q[4 + i] = b[i];
      if constexpr (L::kHighBits) {
        qio::ld128<Src>(blk + L::kQh, vec, a);
        qio::ld128<Src>(blk + L::kQh + 16, vec, b);
#pragma unroll
        for (int i = 0; i < 4; ++i) out.qh[i] = a[i], out.qh[4 + i] = b[i];
      }
      out.c4 = c4;
    }
    // The runs' factors from the header, as KBlock4::load_chunk forms them: once per chunk, after
    // its loads have landed and before its dot products (gemv_kernel.cuh's chunk_ready).
    __device__ static void ready(Chunk& w) {
      const uint32_t sc[3] = {w.hdr[1], w.hdr[2], w.hdr[3]};
      const float d = qio::f16(w.hdr[0]), dmin = qio::f16(w.hdr[0] >> 16);
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int ls, lm;
        k4_scale_min(sc, 2 * w.c4 + r, ls, lm);
        w.f[r] = {d * qio::to_f(ls), dmin * qio::to_f(lm)};
      }
    }
    // Per run d dx sum(q xq) - m dx sum(xq), the integer sums exact (dp4a); xq holds run r's 32
    // quants in words 8 r .. 8 r + 7, dx[r] the scale of its activation block.
    __device__ static float dot_q8(const Chunk& w, const int (&xq)[16], const float (&dx)[2], float acc) {
      int s0 = 0, s1 = 0, z0 = 0, z1 = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        uint32_t lo = w.q[i] & 0x0F0F0F0Fu, hi = (w.q[i] >> 4) & 0x0F0F0F0Fu;
        if constexpr (L::kHighBits) {
          const uint32_t hb = (w.qh[i] >> (2 * w.c4)) & 0x03030303u;
          lo |= (hb & 0x01010101u) << 4;
          hi |= (hb & 0x02020202u) << 3;
        }
        s0 = __dp4a(static_cast<int>(lo), xq[i], s0);
        s1 = __dp4a(static_cast<int>(hi), xq[8 + i], s1);
        z0 = __dp4a(0x01010101, xq[i], z0);
        z1 = __dp4a(0x01010101, xq[8 + i], z1);
      }
      acc = fmaf(w.f[0].d * dx[0], qio::to_f(s0), acc);
      acc = fmaf(-w.f[0].m * dx[0], qio::to_f(z0), acc);
      acc = fmaf(w.f[1].d * dx[1], qio::to_f(s1), acc);
      return fmaf(-w.f[1].m * dx[1], qio::to_f(z1), acc);
    }
  };
};

}  // namespace gl::cuda
