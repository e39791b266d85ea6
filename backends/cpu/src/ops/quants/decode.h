// quants/decode.h - block decoders of the llama.cpp quant family for the CPU kernels: AVX2
// intrinsics where the target has them (AVX-512 builds too), plain loops otherwise; the test
// below passes on both (GL_CPU_NATIVE=OFF gives the plain loops).
//
//   decode_row<DecodeQ4_K>(blocks, y, n);  // == dequantize_row_q4_k(blocks, y, n), bit for bit
//
// Each decoder first unpacks a block's quants into int8 levels (integer work only), then scales
// them per sub-block: y = s * float(q) (- m or + m), the same two f32 roundings in the same order
// as the reference dequantizers in ggml-lite/src/quants/ (the backend has -ffp-contract=off, so
// no FMA is formed). Scale factors are computed as the reference computes them, once per
// sub-block. tests/ops/quant_decode_test.cpp compares every type with the reference bit for bit.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "../simd.h"
#include "ggml-lite/quants/iq4_nl.h"
#include "ggml-lite/quants/iq4_xs.h"
#include "ggml-lite/quants/mxfp4.h"
#include "ggml-lite/quants/q2_k.h"
#include "ggml-lite/quants/q3_k.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q4_1.h"
#include "ggml-lite/quants/q4_k.h"
#include "ggml-lite/quants/q5_0.h"
#include "ggml-lite/quants/q5_1.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"

namespace gl::cpu {
namespace {

using simd::half_to_float;

// y[i] = s * q[i] (- m, + m): Op says which. n is a multiple of 8.
enum class Offset { NONE, SUB, ADD };
template <Offset Op>
inline void scale_levels_op(const int8_t* q, float s, float m, float* y, int n) {
#if defined(__AVX2__)
  // Explicit 8-wide steps: GCC picks 4-wide code for the 16-element sub-blocks by itself.
  const __m256 vs = _mm256_set1_ps(s), vm = _mm256_set1_ps(m);
  for (int i = 0; i < n; i += 8) {
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
    __m256 v = _mm256_mul_ps(vs, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)));
    if constexpr (Op == Offset::SUB) v = _mm256_sub_ps(v, vm);
    if constexpr (Op == Offset::ADD) v = _mm256_add_ps(v, vm);
    _mm256_storeu_ps(y + i, v);
  }
#else
  for (int i = 0; i < n; ++i) {
    const float v = s * static_cast<float>(q[i]);
    y[i] = Op == Offset::SUB ? v - m : Op == Offset::ADD ? v + m : v;
  }
#endif
}
inline void scale_levels(const int8_t* q, float s, float* y, int n) { scale_levels_op<Offset::NONE>(q, s, 0.0f, y, n); }
inline void scale_levels_sub(const int8_t* q, float s, float m, float* y, int n) {
  scale_levels_op<Offset::SUB>(q, s, m, y, n);
}
inline void scale_levels_add(const int8_t* q, float s, float m, float* y, int n) {
  scale_levels_op<Offset::ADD>(q, s, m, y, n);
}

// Levels are written with one 32-byte store per 32 elements: the scaling loops then read them
// back with loads that lie inside one store (two 16-byte stores read by one 32-byte load cannot be
// forwarded, and that stall cost more than the rest of the decode).

// 32 bytes: the low nibbles of qs[0..15], then their high nibbles.
inline void nibbles_32(const uint8_t* qs, int8_t* q) {
#if defined(__AVX2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_and_si256(both, _mm256_set1_epi8(0x0F)));
#else
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>(qs[j] & 0xF);
    q[j + 16] = static_cast<int8_t>(qs[j] >> 4);
  }
#endif
}
// The same, each nibble mapped through a 16-entry table (IQ4_NL and MXFP4 values).
inline void table_levels_32(const uint8_t* qs, const int8_t* table, int8_t* q) {
#if defined(__AVX2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
  const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_shuffle_epi8(t, idx));
#else
  for (int j = 0; j < 16; ++j) {
    q[j] = table[qs[j] & 0xF];
    q[j + 16] = table[qs[j] >> 4];
  }
#endif
}
// Q4_K / Q5_K: 64c + l is the low nibble of qs[32c + l], 64c + 32 + l the high one.
inline void k_nibbles(const uint8_t* qs, int8_t* q) {
  for (int c = 0; c < 4; ++c) {
#if defined(__AVX2__)
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    const __m256i m = _mm256_set1_epi8(0x0F);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c), _mm256_and_si256(v, m));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), m));
#else
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = static_cast<int8_t>(qs[32 * c + l] & 0xF);
      q[64 * c + 32 + l] = static_cast<int8_t>(qs[32 * c + l] >> 4);
    }
#endif
  }
}
// Adds bit 4 of each element (bit j of the little-endian u32 qh).
inline void add_high_bits_32(const uint8_t* qh, int8_t* q) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
#if defined(__AVX2__)
  // Byte j gets byte j / 8 of h, then tests its bit j % 8.
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                          _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_or_si256(v, high));
#else
  for (int j = 0; j < 32; ++j) q[j] = static_cast<int8_t>(q[j] | (((h >> j) & 1u) << 4));
#endif
}
inline void offset_levels(int8_t* q, int n, int off) {
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(q[i] - off);
}
// Q2_K / Q3_K: element 128h + 32k + l is bits 2k..2k+1 of qs[32h + l].
inline void two_bit_levels(const uint8_t* qs, int8_t* q) {
  for (int h = 0; h < 2; ++h) {
#if defined(__AVX2__)
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    const __m256i m = _mm256_set1_epi8(3);
    for (int k = 0; k < 4; ++k)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * k),
                          _mm256_and_si256(_mm256_srli_epi16(v, 2 * k), m));
#else
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * k + l] = static_cast<int8_t>((qs[32 * h + l] >> (2 * k)) & 3);
#endif
  }
}
// q[32g + l] += bit g of bits[l] ? set : clear, for g < 8 (Q3_K's high bit, Q5_K's bit 4).
inline void add_by_bit(const uint8_t* bits, int8_t set, int8_t clear, int8_t* q) {
  for (int g = 0; g < 8; ++g) {
#if defined(__AVX2__)
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits));
    const __m256i mask = _mm256_set1_epi8(static_cast<char>(1 << g));
    const __m256i is_set = _mm256_cmpeq_epi8(_mm256_and_si256(b, mask), mask);
    const __m256i add = _mm256_blendv_epi8(_mm256_set1_epi8(clear), _mm256_set1_epi8(set), is_set);
    int8_t* qg = q + 32 * g;
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qg));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qg), _mm256_add_epi8(v, add));
#else
    for (int l = 0; l < 32; ++l)
      q[32 * g + l] = static_cast<int8_t>(q[32 * g + l] + (((bits[l] >> g) & 1) ? set : clear));
#endif
  }
}
// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (of 8), times d and dmin.
inline void k4_factors(uint16_t d16, uint16_t dmin16, const uint8_t* s, float* d, float* m) {
  const float dall = half_to_float(d16), mall = half_to_float(dmin16);
  for (int j = 0; j < 8; ++j) {
    const int ls = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    const int lm = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    d[j] = dall * static_cast<float>(ls);
    m[j] = mall * static_cast<float>(lm);
  }
}

struct DecodeQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int64_t kBlock = kQ4_0Block;
  static void block(const Block& b, float* y) {
    int8_t q[32];
    nibbles_32(b.qs, q);
    offset_levels(q, 32, 8);
    scale_levels(q, half_to_float(b.d), y, 32);
  }
};

struct DecodeQ4_1 {
  using Block = BlockQ4_1;
  static constexpr int64_t kBlock = kQ4_1Block;
  static void block(const Block& b, float* y) {
    int8_t q[32];
    nibbles_32(b.qs, q);
    scale_levels_add(q, half_to_float(b.d), half_to_float(b.m), y, 32);
  }
};

struct DecodeQ5_0 {
  using Block = BlockQ5_0;
  static constexpr int64_t kBlock = kQ5_0Block;
  static void block(const Block& b, float* y) {
    int8_t q[32];
    nibbles_32(b.qs, q);
    add_high_bits_32(b.qh, q);
    offset_levels(q, 32, 16);
    scale_levels(q, half_to_float(b.d), y, 32);
  }
};

struct DecodeQ5_1 {
  using Block = BlockQ5_1;
  static constexpr int64_t kBlock = kQ5_1Block;
  static void block(const Block& b, float* y) {
    int8_t q[32];
    nibbles_32(b.qs, q);
    add_high_bits_32(b.qh, q);
    scale_levels_add(q, half_to_float(b.d), half_to_float(b.m), y, 32);
  }
};

struct DecodeQ2_K {
  using Block = BlockQ2_K;
  static constexpr int64_t kBlock = kQ2_KBlock;
  static void block(const Block& b, float* y) {
    int8_t q[256];
    two_bit_levels(b.qs, q);
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scales[j] & 0xF), ml = dmin * static_cast<float>(b.scales[j] >> 4);
      scale_levels_sub(q + 16 * j, dl, ml, y + 16 * j, 16);
    }
  }
};

struct DecodeQ3_K {
  using Block = BlockQ3_K;
  static constexpr int64_t kBlock = kQ3_KBlock;
  // Signed 6-bit scale j (stored + 32): low nibbles in bytes 0-7, high 2 bits in bytes 8-11.
  static int scale(const uint8_t* s, int j) {
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
  }
  static void block(const Block& b, float* y) {
    int8_t q[256];
    two_bit_levels(b.qs, q);
    // A clear bit (i / 32) of hmask[i % 32] means the level is 4 lower.
    add_by_bit(b.hmask, 0, -4, q);
    const float d = half_to_float(b.d);
    for (int j = 0; j < 16; ++j) scale_levels(q + 16 * j, d * static_cast<float>(scale(b.scales, j)), y + 16 * j, 16);
  }
};

struct DecodeQ4_K {
  using Block = BlockQ4_K;
  static constexpr int64_t kBlock = kQ4_KBlock;
  static void block(const Block& b, float* y) {
    int8_t q[256];
    k_nibbles(b.qs, q);
    float d[8], m[8];
    k4_factors(b.d, b.dmin, b.scales, d, m);
    for (int j = 0; j < 8; ++j) scale_levels_sub(q + 32 * j, d[j], m[j], y + 32 * j, 32);
  }
};

struct DecodeQ5_K {
  using Block = BlockQ5_K;
  static constexpr int64_t kBlock = kQ5_KBlock;
  static void block(const Block& b, float* y) {
    int8_t q[256];
    k_nibbles(b.qs, q);
    // Bit 4 of element 32j + l is bit j of qh[l] (the nibble is clear there, so adding 16 sets it).
    add_by_bit(b.qh, 16, 0, q);
    float d[8], m[8];
    k4_factors(b.d, b.dmin, b.scales, d, m);
    for (int j = 0; j < 8; ++j) scale_levels_sub(q + 32 * j, d[j], m[j], y + 32 * j, 32);
  }
};

struct DecodeQ6_K {
  using Block = BlockQ6_K;
  static constexpr int64_t kBlock = kQ6_KBlock;
  // Element 128h + 32k + l: low 4 bits from ql[64h + 32(k & 1) + l] (low nibble for k < 2),
  // high 2 bits from bits 2k..2k+1 of qh[32h + l]; stored + 32.
  static void levels(const Block& b, int8_t* q) {
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k) {
#if defined(__AVX2__)
        const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
        const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32 * (k & 1)));
        const __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), m4);
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), m2), 4);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * k),
                            _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32)));
#else
        for (int l = 0; l < 32; ++l) {
          const uint8_t lo_byte = b.ql[64 * h + 32 * (k & 1) + l];
          const int lo = k < 2 ? lo_byte & 0xF : lo_byte >> 4;
          const int hi = (b.qh[32 * h + l] >> (2 * k)) & 3;
          q[128 * h + 32 * k + l] = static_cast<int8_t>((lo | (hi << 4)) - 32);
        }
#endif
      }
  }
  static void block(const Block& b, float* y) {
    int8_t q[256];
    levels(b, q);
    const float d = half_to_float(b.d);
    for (int j = 0; j < 16; ++j) scale_levels(q + 16 * j, d * static_cast<float>(b.scales[j]), y + 16 * j, 16);
  }
};

struct DecodeIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr int64_t kBlock = kIQ4_NLBlock;
  static void block(const Block& b, float* y) {
    int8_t q[32];
    table_levels_32(b.qs, kIQ4_NLValues, q);
    scale_levels(q, half_to_float(b.d), y, 32);
  }
};

struct DecodeIQ4_XS {
  using Block = BlockIQ4_XS;
  static constexpr int64_t kBlock = kIQ4_XSBlock;
  static void block(const Block& b, float* y) {
    const float d = half_to_float(b.d);
    for (int s = 0; s < 8; ++s) {
      const int ls = ((b.scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((b.scales_h >> (2 * s)) & 3) << 4);
      int8_t q[32];
      table_levels_32(b.qs + 16 * s, kIQ4_NLValues, q);
      scale_levels(q, d * static_cast<float>(ls - 32), y + 32 * s, 32);
    }
  }
};

struct DecodeMXFP4 {
  using Block = BlockMXFP4;
  static constexpr int64_t kBlock = kMXFP4Block;
  // Half of the E8M0 scale 2^(e - 127) (the value table holds doubled FP4 values).
  static float half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? uint32_t{0x00200000u} << e : uint32_t{e - 1u} << 23;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  static void block(const Block& b, float* y) {
    int8_t q[32];
    table_levels_32(b.qs, kMXFP4Values, q);
    scale_levels(q, half_scale(b.e), y, 32);  // the reference's q * d: the same product
  }
};

// n elements (a multiple of D::kBlock) of a row of D's blocks -> floats.
template <class D>
void decode_row(const typename D::Block* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / D::kBlock; ++b) D::block(x[b], y + b * D::kBlock);
}

}  // namespace
}  // namespace gl::cpu
