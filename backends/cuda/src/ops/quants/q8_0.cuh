// quants/q8_0.cuh - Q8_0 on CUDA: QuantTraits<DType::Q8_0>, the device side of ggml-lite/quants/q8_0.h.
//
//   using Q = QuantTraits<DType::Q8_0>;
//   float v = Q::elem(row + (i0 / Q::kBlock) * Q::kBlockBytes, i0 % Q::kBlock);  // d * q
//   Q::quantize(floats, blk);                                                    // 32 floats -> one block
//
// Every conversion is bit-exact with the reference in ggml-lite/src/quants/q8_0.cpp: d is read as
// an IEEE half and multiplied once; the quantizer uses explicitly rounded operations so no
// contraction or approximate division can change a quant. Blocks are 34 bytes, so only 2-byte
// alignment holds: quants are read as 16-bit words.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "block_io.cuh"
#include "ggml-lite/dtype.h"

namespace gl::cuda {

template <>
struct QuantTraits<DType::Q8_0> {
  static constexpr DType kType = DType::Q8_0;
  static constexpr int kBlock = kQ8_0Block;
  static constexpr int kBlockBytes = kQ8_0BlockBytes;
  static constexpr int kAlign = 2;

  __device__ static float scale(const char* blk) {
    return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(blk)));
  }
  __device__ static const int8_t* quants(const char* blk) {
    return static_cast<const int8_t*>(static_cast<const void*>(blk + offsetof(BlockQ8_0, qs)));
  }

  // Element i (0 .. kBlock-1) of the block at blk.
  __device__ static float elem(const char* blk, int i) { return scale(blk) * static_cast<float>(quants(blk)[i]); }

  // Elements 2p and 2p+1 of the block, each rounded to half once (the cuBLAS weight tiles): both
  // quants come from one 16-bit read, so a warp's reads and half2 writes are coalesced.
  __device__ static __half2 pair_f16(const char* blk, int p) {
    const float d = scale(blk);
    const uint16_t u = reinterpret_cast<const uint16_t*>(blk + offsetof(BlockQ8_0, qs))[p];
    return __floats2half2_rn(d * static_cast<float>(static_cast<int8_t>(u & 0xffu)),
                             d * static_cast<float>(static_cast<int8_t>(u >> 8)));
  }

  // One block from kBlock floats: d = amax / 127, q = round-half-away(x * (1 / d)).
  __device__ static void quantize(const float* x, char* blk) {
    float amax = 0.0f;
    for (int i = 0; i < kBlock; ++i) amax = fmaxf(amax, fabsf(x[i]));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    *reinterpret_cast<uint16_t*>(blk) = __half_as_ushort(__float2half_rn(d));
    auto* qs = static_cast<int8_t*>(static_cast<void*>(blk + offsetof(BlockQ8_0, qs)));
    for (int i = 0; i < kBlock; ++i) qs[i] = static_cast<int8_t>(lroundf(__fmul_rn(x[i], id)));
  }

  // GEMV (matmul_gemv.cu): a chunk is a quarter block (8 quants) and the block's scale; rows are
  // dense, the dot is d * sum(q x) over the chunk.
  static constexpr int kChunk = 8;
  static constexpr int kRuns = 1;  // the chunk's elements are adjacent
  __device__ static int64_t run_start(int64_t c, int) { return c * kChunk; }
  struct Chunk {
    uint32_t q[kChunk / 4];  // quant 4i + b in byte b of q[i], converted at the dot
    float d;
  };
  __device__ static void load_chunk(const char* row, int64_t c, Chunk& out) {
    constexpr int kPerBlock = kBlock / kChunk;
    const char* blk = row + (c / kPerBlock) * int64_t{kBlockBytes};
    const uint16_t* qs = reinterpret_cast<const uint16_t*>(blk + offsetof(BlockQ8_0, qs) + (c % kPerBlock) * kChunk);
    out.d = __half2float(__ushort_as_half(__ldg(reinterpret_cast<const uint16_t*>(blk))));
#pragma unroll
    for (int i = 0; i < kChunk / 4; ++i) out.q[i] = uint32_t{__ldg(qs + 2 * i)} | uint32_t{__ldg(qs + 2 * i + 1)} << 16;
  }
  // Quant e as a float without an I2F, which issues at a quarter of the FMA rate on sm_90: same
  // values, so the same bits (H200, 9B Q8_0 decode: 191 -> 200 tok/s).
  __device__ static float quant(const Chunk& w, int e) { return qio::sbyte_f(w.q[e / 4], e % 4); }
  __device__ static float dot_chunk(const Chunk& w, const float (&x)[kChunk], float acc) {
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < kChunk; ++e) s = fmaf(quant(w, e), x[e], s);
    return fmaf(w.d, s, acc);
  }

  // Against int8 activations (Precision::FAST, matmul_gemv_q8.cu): a chunk is a whole block, its 32
  // quants as 8 words (quant 4i + b in byte b of q[i]) and d; the dot is d dx sum(q xq), the integer
  // sum exact (dp4a), against the activation block of the same 32 elements.
  struct Q8Wide {
    static constexpr int kChunk = 32;
    static constexpr int kRuns = 1;
    __device__ static int64_t run_start(int64_t c, int) { return c * kChunk; }
    struct Chunk {
      uint32_t q[8];
      float d;
    };
    // The quants start 2 bytes into a 2-byte aligned block: the 8 aligned words from their word's
    // start, then (when they start mid-word) the last quant pair, funnel-shifted into place. Every
    // read stays in the block.
    template <class Src = qio::FromGlobal>
    __device__ static void load_chunk(const char* row, int64_t c, Chunk& out, bool) {
      const char* blk = row + c * int64_t{kBlockBytes};
      const char* qs = blk + offsetof(BlockQ8_0, qs);
      const uintptr_t a = reinterpret_cast<uintptr_t>(qs);
      const unsigned int* base = reinterpret_cast<const unsigned int*>(a & ~uintptr_t{3});
      const uint32_t sh = static_cast<uint32_t>(a & 3u) * 8u;  // 0 or 16
      uint32_t wd[9];
#pragma unroll
      for (int i = 0; i < 8; ++i) wd[i] = Src::ld(base + i);
      wd[8] = qio::ld16<Src>(qs + 30);
#pragma unroll
      for (int i = 0; i < 8; ++i) out.q[i] = __funnelshift_r(wd[i], wd[i + 1], sh);
      out.d = qio::f16(qio::ld16<Src>(blk));
    }
    __device__ static float dot_q8(const Chunk& w, const int (&xq)[8], const float (&dx)[1], float acc) {
      int s = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) s = __dp4a(static_cast<int>(w.q[i]), xq[i], s);
      return fmaf(w.d * dx[0], qio::to_f(s), acc);
    }
  };
};

}  // namespace gl::cuda
