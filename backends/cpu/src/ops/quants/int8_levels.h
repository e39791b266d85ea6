// quants/int8_levels.h - weight blocks of Q4_K, Q5_K and Q6_K as integers for the FAST matrix rows
// (int8_dot.h): unsigned levels, an int16 scale and offset factor per 16 elements, and two float
// factors, so that for an activation block (d_x, q_x, sums of 16 s_x)
//
//   w . x = d_x * (d * sum_s sc[s] * (q_s . q_x,s) - dmin * sum_s mn[s] * s_x[s])
//
// exactly as the block's dequantized weights give it (w = d sc q - dmin mn, per sub-block).
//
//   LevelsQ4_K lv(block);            // AVX2: the block in registers, levels made on demand
//   __m256i q = lv.levels(t);        // 32 levels of elements 32t .. 32t + 31
//   __m256i s = lv.scales(t);        // the int16 scale of each int16 lane of maddubs(q, x)
//   KLevels kl; unpack(block, kl);   // without AVX2: the same numbers in arrays
//
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "../simd.h"
#include "ggml-lite/quants/q4_k.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"

namespace gl::cpu {
namespace {

// Q4_K / Q5_K: the eight 6-bit scales and mins of the 12 packed bytes s (layout in q4_k.h), as
// the bytes of two little-endian words, four at a time: bytes 0-3 of s hold scales 0-3 and the top
// bits of scales 4-7, bytes 4-7 the same for the mins, bytes 8-11 the low nibbles of 4-7. Kept in
// registers: spilling the bytes and reloading them as words would stall store forwarding.
inline void k4_scales_mins(const uint8_t* s, uint64_t& sc, uint64_t& mn) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3Fu, mn_lo = b & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | (((a >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0Fu) | (((b >> 6) & 0x03030303u) << 4);
  sc = sc_lo | (uint64_t{sc_hi} << 32);
  mn = mn_lo | (uint64_t{mn_hi} << 32);
}

#if defined(__AVX2__)
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 int16 lanes, all equal to int16 element e of v (e < 8; v holds 8 of them, in both halves).
inline __m256i splat_i16(__m256i v, int e) {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<int16_t>(((2 * e + 1) << 8) | (2 * e))));
}

// Q4_K and Q5_K share scales: sub-block t (32 elements) has one scale and one min.
struct K4Factors {
  __m256i sc;  // the 8 scales as int16, in both 128-bit halves
  __m256i mn;  // per 16 elements: the min of their sub-block
  float d, dmin;
  K4Factors(uint16_t d16, uint16_t dmin16, const uint8_t* scales) {
    uint64_t s64, m64;
    k4_scales_mins(scales, s64, m64);
    const __m128i s16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(s64)));
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(m64)));
    sc = _mm256_set_m128i(s16, s16);
    mn = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
    d = simd::half_to_float(d16);
    dmin = simd::half_to_float(dmin16);
  }
  __m256i scales(int t) const { return splat_i16(sc, t); }
};

struct LevelsQ4_K : K4Factors {
  using Block = BlockQ4_K;
  const uint8_t* qs;
  explicit LevelsQ4_K(const Block& b) : K4Factors(b.d, b.dmin, b.scales), qs(b.qs) {}
  // Element 64c + l is the low nibble of qs[32c + l], 64c + 32 + l the high one.
  __m256i levels(int t) const {
    const __m256i v = load256(qs + 32 * (t / 2));
    return _mm256_and_si256(t % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
  }
};

struct LevelsQ5_K : K4Factors {
  using Block = BlockQ5_K;
  const uint8_t* qs;
  const uint8_t* qh;
  explicit LevelsQ5_K(const Block& b) : K4Factors(b.d, b.dmin, b.scales), qs(b.qs), qh(b.qh) {}
  // The Q4_K nibble plus bit 4: bit t of qh[l] for element 32t + l.
  __m256i levels(int t) const {
    const __m256i v = load256(qs + 32 * (t / 2));
    const __m256i lo = _mm256_and_si256(t % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
    const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(load256(qh), t), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(bit, 4));
  }
};

// Q6_K: w = d sc (q - 32), so the offset term is 32 sc times the activations' sums (dmin = d).
struct LevelsQ6_K {
  using Block = BlockQ6_K;
  const Block* b;
  __m256i halves[2];  // the 16 scales as int16: scales 0-7 in both halves, then 8-15
  __m256i mn;         // 32 sc per 16 elements
  float d, dmin;
  explicit LevelsQ6_K(const Block& blk) : b(&blk) {
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    halves[0] = _mm256_permute2x128_si256(sc, sc, 0x00);
    halves[1] = _mm256_permute2x128_si256(sc, sc, 0x11);
    mn = _mm256_slli_epi16(sc, 5);
    d = dmin = simd::half_to_float(blk.d);
  }
  // Element 128h + 32k + l (t = 4h + k): low 4 bits from ql[64h + 32(k & 1) + l] (high nibble
  // for k >= 2), high 2 bits from bits 2k..2k+1 of qh[32h + l].
  __m256i levels(int t) const {
    const int h = t / 4, k = t % 4;
    const __m256i lb = load256(b->ql + 64 * h + 32 * (k & 1));
    const __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(load256(b->qh + 32 * h), 2 * k), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  }
  // Lanes 0-7 cover elements 32t .. 32t + 15 (scale 2t), lanes 8-15 the next 16 (scale 2t + 1).
  __m256i scales(int t) const {
    const int u = t % 4;
    const auto lo = static_cast<char>(4 * u), hi = static_cast<char>(4 * u + 2);
    const auto lo1 = static_cast<char>(lo + 1), hi1 = static_cast<char>(hi + 1);
    return _mm256_shuffle_epi8(
        halves[t / 4], _mm256_setr_epi8(lo, lo1, lo, lo1, lo, lo1, lo, lo1, lo, lo1, lo, lo1, lo, lo1, lo, lo1, hi, hi1,
                                        hi, hi1, hi, hi1, hi, hi1, hi, hi1, hi, hi1, hi, hi1, hi, hi1));
  }
};
#else
struct KLevels {
  uint8_t q[256];  // levels in element order: 0..15 (Q4_K), 0..31 (Q5_K), 0..63 (Q6_K)
  int16_t sc[16];  // scale of elements 16s .. 16s + 15
  int16_t mn[16];  // factor of the activations' sum over those elements
  float d, dmin;
};

inline void k4_unpack(const uint8_t* qs, uint16_t d, uint16_t dmin, const uint8_t* scales, KLevels& lv) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      lv.q[64 * c + l] = qs[32 * c + l] & 0xF;
      lv.q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
    }
  uint64_t s, m;
  k4_scales_mins(scales, s, m);
  for (int j = 0; j < 16; ++j) {
    lv.sc[j] = static_cast<int16_t>((s >> (8 * (j / 2))) & 0xFF);
    lv.mn[j] = static_cast<int16_t>((m >> (8 * (j / 2))) & 0xFF);
  }
  lv.d = simd::half_to_float(d);
  lv.dmin = simd::half_to_float(dmin);
}

struct LevelsQ4_K {
  using Block = BlockQ4_K;
  static void unpack(const Block& b, KLevels& lv) { k4_unpack(b.qs, b.d, b.dmin, b.scales, lv); }
};

struct LevelsQ5_K {
  using Block = BlockQ5_K;
  static void unpack(const Block& b, KLevels& lv) {
    k4_unpack(b.qs, b.d, b.dmin, b.scales, lv);
    for (int i = 0; i < 256; ++i) lv.q[i] = static_cast<uint8_t>(lv.q[i] | (((b.qh[i % 32] >> (i / 32)) & 1) << 4));
  }
};

struct LevelsQ6_K {
  using Block = BlockQ6_K;
  static void unpack(const Block& b, KLevels& lv) {
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = i % 128 / 32, l = i % 32;
      const uint8_t lo_byte = b.ql[64 * h + 32 * (k & 1) + l];
      const int lo = k < 2 ? lo_byte & 0xF : lo_byte >> 4;
      lv.q[i] = static_cast<uint8_t>(lo | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4));
    }
    for (int s = 0; s < 16; ++s) {
      lv.sc[s] = b.scales[s];
      lv.mn[s] = static_cast<int16_t>(32 * b.scales[s]);
    }
    lv.d = lv.dmin = simd::half_to_float(b.d);
  }
};
#endif

}  // namespace
}  // namespace gl::cpu
