// quants/block32.cuh - device traits shared by the 32-element nibble blocks (Q4_0, Q4_1, Q5_0,
// Q5_1, IQ4_NL, MXFP4): element j in the low nibble of qs[j], element j + 16 in the high one, an
// optional fifth bit per element (qh) and one or two block scales.
//
//   template <> struct QuantTraits<DType::Q4_0> : Block32<Q4_0Layout> {};  // quants/q4_0.cuh
//
// A layout L names the bytes and the arithmetic: y = a * t(q) (+ b when L::kMin), where q is the
// element's level (4 or 5 bits), t maps it to an integer (q - 8, a table entry, ...) and a, b come
// from the block header (L::head). elem() and pair_f16() evaluate exactly the reference's
// expression (explicitly rounded, so nvcc cannot contract d * q + m into an fma).
// GEMV chunk: half the quant bytes of a block (8 bytes, 16 elements in two runs of 8), so every
// weight byte is read once by one thread; the dot is a * sum(t x) (+ b * sum(x)).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "block_io.cuh"

namespace gl::cuda {

// A 32-element block's header as the arithmetic uses it.
struct Head32 {
  float a;      // scale
  float b;      // min (affine layouts), else 0
  uint32_t qh;  // bit j: fifth bit of element j (5-bit layouts), else 0
};

template <class L>
struct Block32 {
  static constexpr DType kType = L::kType;
  static constexpr int kBlock = 32;
  static constexpr int kBlockBytes = L::kBytes;
  static constexpr int kAlign = L::kAlign;  // the quant bytes are read 4 at a time at this alignment

  // Level of element i (0..31) of the block at blk with header h.
  __device__ static int level(const char* blk, const Head32& h, int i) {
    const uint32_t byte = qio::ld8(blk + L::kQs + (i & 15));
    int q = static_cast<int>(i < 16 ? byte & 0xFu : byte >> 4);
    if constexpr (L::kHighBits) q |= static_cast<int>((h.qh >> i) & 1u) << 4;
    return q;
  }
  __device__ static float scaled(const Head32& h, int q) {
    const float t = qio::to_f(L::t(q));
    if constexpr (L::kMin) {
      return __fadd_rn(__fmul_rn(h.a, t), h.b);
    } else {
      return __fmul_rn(h.a, t);
    }
  }

  __device__ static float elem(const char* blk, int i) {
    const Head32 h = L::head(blk);
    return scaled(h, level(blk, h, i));
  }
  // Elements 2p and 2p+1, each rounded to half once (the cuBLAS weight tiles).
  __device__ static __half2 pair_f16(const char* blk, int p) {
    const Head32 h = L::head(blk);
    return __floats2half2_rn(scaled(h, level(blk, h, 2 * p)), scaled(h, level(blk, h, 2 * p + 1)));
  }

  // Elements i .. i + 15 (i = 0: the low nibbles, 16: the high ones) as elem() gives them, for the
  // MoE tensor-core tiles (matmul_id_mma.cu): the header once, the quant bytes a word at a time.
  // Src: the block in global memory or staged in shared memory.
  template <class Src = qio::FromGlobal>
  __device__ static void values16(const char* blk, int i, float (&v)[16]) {
    const Head32 h = L::template head<Src>(blk);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t b = qio::ld32<kAlign, Src>(blk + L::kQs + 4 * w);
      const uint32_t q = (i ? b >> 4 : b) & 0x0F0F0F0Fu;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int lv = static_cast<int>(qio::byte_of(q, e));
        if constexpr (L::kHighBits) lv |= static_cast<int>((h.qh >> (i + 4 * w + e)) & 1u) << 4;
        v[4 * w + e] = scaled(h, lv);
      }
    }
  }

  // GEMV (matmul_gemv.cu): chunk c is half g = c % 2 of block c / 2: quant bytes 8g..8g+7, whose
  // low nibbles are elements 8g.. (run 0) and high nibbles elements 16 + 8g.. (run 1).
  static constexpr int kChunk = 16;
  static constexpr int kRuns = 2;
  __device__ static int64_t run_start(int64_t c, int r) { return (c >> 1) * kBlock + (c & 1) * 8 + r * 16; }
  struct Chunk {
    uint32_t q[2];  // the 8 quant bytes
    uint32_t hi;    // fifth bits: bit e of run 0 in bit e, of run 1 in bit 8 + e
    float a, b;
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    const char* blk = row + (c >> 1) * int64_t{kBlockBytes};
    const int g = static_cast<int>(c & 1);
    const Head32 h = L::head(blk);
    const char* qs = blk + L::kQs + 8 * g;
    out.q[0] = qio::ld32<kAlign>(qs);
    out.q[1] = qio::ld32<kAlign>(qs + 4);
    out.hi = ((h.qh >> (8 * g)) & 0xffu) | (((h.qh >> (16 + 8 * g)) & 0xffu) << 8);
    out.a = h.a;
    out.b = h.b;
  }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s = 0.0f, sx = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t byte = qio::byte_of(w.q[e >> 2], e & 3);
      int lo = static_cast<int>(byte & 0xFu), hi = static_cast<int>(byte >> 4);
      if constexpr (L::kHighBits) {
        lo |= static_cast<int>((w.hi >> e) & 1u) << 4;
        hi |= static_cast<int>((w.hi >> (8 + e)) & 1u) << 4;
      }
      s = fmaf(qio::small_f(L::t(lo)), x[e], s);
      s = fmaf(qio::small_f(L::t(hi)), x[8 + e], s);
      if constexpr (L::kMin) sx += x[e] + x[8 + e];
    }
    if constexpr (L::kMin) acc = fmaf(w.b, sx, acc);
    return fmaf(w.a, s, acc);
  }
};

}  // namespace gl::cuda
