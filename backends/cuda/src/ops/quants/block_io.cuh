// quants/block_io.cuh - what the device traits of the llama.cpp block types share: reads of block
// bytes at the alignment a block guarantees, fp16 and E8M0 scales, and 16-entry level tables.
//
//   const uint32_t w = qio::ld32<2>(blk + 6);             // 4 bytes at a 2-byte aligned address
//   const float d = qio::f16(qio::ld16(blk));              // an fp16 field, exactly
//   const int v = qio::level16<W0, W1, W2, W3>(n);         // a table entry, from registers
//
// Why alignment is a template argument: blocks are 17 to 210 bytes, so a field's address is only
// as aligned as the block size allows (18-byte blocks: 2 bytes). Each type reads with the widest
// load its layout permits and declares it as kAlign; the launchers assert that the tensor data
// keeps that alignment. All reads go through the read-only cache (weights never change in a kernel).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "ggml-lite/dtype.h"

namespace gl::cuda {

template <DType T>
struct QuantTraits;  // one specialisation per quantized type, in quants/<type>.cuh

}  // namespace gl::cuda

namespace gl::cuda::qio {

// Where block bytes are read from (the loads' Src argument): the weights in global memory, through
// the read-only cache, or a copy of their rows in shared memory (the staged GEMV,
// gemv_stream.cuh), which the read-only path cannot address.
struct FromGlobal {
  template <class T>
  __device__ static T ld(const T* p) {
    return __ldg(p);
  }
};
struct FromShared {
  template <class T>
  __device__ static T ld(const T* p) {
    return *p;
  }
};

template <class Src = FromGlobal>
__device__ __forceinline__ uint32_t ld8(const char* p) {
  return Src::ld(reinterpret_cast<const unsigned char*>(p));
}
template <class Src = FromGlobal>
__device__ __forceinline__ uint32_t ld16(const char* p) {
  return Src::ld(reinterpret_cast<const unsigned short*>(p));
}

// Four little-endian bytes at p, which is kAlign-byte aligned (1, 2 or 4).
template <int kAlign, class Src = FromGlobal>
__device__ __forceinline__ uint32_t ld32(const char* p) {
  static_assert(kAlign == 1 || kAlign == 2 || kAlign == 4, "ld32: 1, 2 or 4-byte alignment");
  if constexpr (kAlign == 4) {
    return Src::ld(reinterpret_cast<const unsigned int*>(p));
  } else if constexpr (kAlign == 2) {
    return ld16<Src>(p) | (ld16<Src>(p + 2) << 16);
  } else {
    return ld8<Src>(p) | (ld8<Src>(p + 1) << 8) | (ld8<Src>(p + 2) << 16) | (ld8<Src>(p + 3) << 24);
  }
}

// Bytes 2p and 2p + 1 of q (levels n < 1024) minus `offset`, exactly, as a half2's bits: each byte
// becomes the mantissa of 1024 + n (exponent bits 0x64), then 1024 + offset is subtracted.
template <int kOffset>
__device__ __forceinline__ __half2 level_pair_h2(uint32_t q, int p) {
  const uint32_t u = __byte_perm(q, 0x64646464u, p ? 0x4342u : 0x4140u);
  return __hsub2(*reinterpret_cast<const __half2*>(&u), __float2half2_rn(1024.0f + kOffset));
}

__device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }

// An IEEE binary16 field (low 16 bits of h) as float: exact, as dtype.cpp's fp16_to_fp32.
__device__ __forceinline__ float f16(uint32_t h) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h & 0xffffu)));
}

// 2^(e - 128), half the E8M0 scale, from its bits (e < 2 is subnormal): the reference's e8m0_half.
__device__ __forceinline__ float e8m0_half(uint32_t e) {
  return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1u) << 23);
}

__device__ __forceinline__ float to_f(int v) { return static_cast<float>(v); }

// Byte b (0..3) of w.
__device__ __forceinline__ uint32_t byte_of(uint32_t w, int b) { return (w >> (8 * b)) & 0xffu; }

// 2^23 + byte b (0..3) of w: the byte as the low mantissa bits of 2^23, a float whose integer
// offset one exact subtraction takes off (an integer conversion, I2F, issues at a fraction of the
// FMA rate).
__device__ __forceinline__ float biased_byte(uint32_t w, int b) {
  return __int_as_float(static_cast<int>(__byte_perm(w, 0x4B000000u, 0x7540u | static_cast<uint32_t>(b))));
}

// Byte b (0..3) of w as a float, exactly and without an I2F.
__device__ __forceinline__ float byte_f(uint32_t w, int b) { return biased_byte(w, b) - 8388608.0f; }

// Byte b (0..3) of w as a signed (two's complement) int8, as a float, the same way: offset to
// unsigned (x ^ 0x80 = x + 128) and both offsets taken off in one subtraction.
__device__ __forceinline__ float sbyte_f(uint32_t w, int b) { return biased_byte(w ^ 0x80808080u, b) - 8388736.0f; }

// A small integer (-128 <= v < 2^23 - 128: a quant level) as a float, exactly, with an integer add
// in place of the I2F: v + 128 in the low mantissa bits of 2^23, then both offsets off in one
// subtraction.
__device__ __forceinline__ float small_f(int v) { return __int_as_float(0x4B000080 + v) - 8388736.0f; }

// 16 bytes at p as four little-endian words: one 16-byte load when p is 16-byte aligned (vec),
// else four 4-byte loads of the same bytes (p 4-byte aligned).
template <class Src = FromGlobal>
__device__ __forceinline__ void ld128(const char* p, bool vec, uint32_t (&w)[4]) {
  if (vec) {
    const uint4 u = Src::ld(reinterpret_cast<const uint4*>(p));
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = Src::ld(reinterpret_cast<const unsigned int*>(p) + i);
}

// 8 bytes at the 2-byte aligned p as two words: three aligned 4-byte loads and a funnel shift
// (instead of four 2-byte loads). Reads up to 4 bytes past p + 8: callers keep that in the block.
template <class Src = FromGlobal>
__device__ __forceinline__ void ld64_a2(const char* p, uint32_t (&w)[2]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const unsigned int* q = reinterpret_cast<const unsigned int*>(a & ~uintptr_t{3});
  const uint32_t sh = static_cast<uint32_t>(a & 3u) * 8u;
  const uint32_t w0 = Src::ld(q), w1 = Src::ld(q + 1), w2 = Src::ld(q + 2);
  w[0] = __funnelshift_r(w0, w1, sh);
  w[1] = __funnelshift_r(w1, w2, sh);
}

// A 16-entry int8 table packed four entries a word (entry n in byte n % 4 of word n / 4), so a
// lookup is two byte permutes in registers instead of a divergent memory read.
__host__ __device__ constexpr uint32_t level_word(const int8_t (&t)[16], int w) {
  uint32_t v = 0;
  for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(static_cast<uint8_t>(t[4 * w + b])) << (8 * b);
  return v;
}

// Entry n (0..15) of the table whose words are W0..W3.
template <uint32_t W0, uint32_t W1, uint32_t W2, uint32_t W3>
__device__ __forceinline__ int level16(uint32_t n) {
  const uint32_t lo = __byte_perm(W0, W1, n & 7u);
  const uint32_t hi = __byte_perm(W2, W3, n & 7u);
  return static_cast<int8_t>(static_cast<uint8_t>((n & 8u) != 0 ? hi : lo));
}

}  // namespace gl::cuda::qio
