// quants/int8_levels.h - weight blocks of Q4_K, Q5_K and Q6_K unpacked to integers for the FAST
// matrix rows (int8_dot.h): unsigned levels, an int16 scale and offset per 16 elements, and two
// float factors, so that for an activation block (d_x, q_x, sums of 16 s_x)
//
//   w . x = d_x * (d * sum_s sc[s] * (q_s . q_x,s) - dmin * sum_s mn[s] * s_x[s])
//
// exactly as the block's dequantized weights give it (w = d sc q - dmin mn, per sub-block).
//
//   KLevels lv;
//   UnpackQ4_K::unpack(block, lv);
//
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "../simd.h"
#include "decode.h"

namespace gl::cpu {
namespace {

struct alignas(32) KLevels {
  uint8_t q[256];  // levels in element order: 0..15 (Q4_K), 0..31 (Q5_K), 0..63 (Q6_K)
  int16_t sc[16];  // scale of elements 16s .. 16s + 15
  int16_t mn[16];  // factor of the activations' sum over those elements
  float d, dmin;
};

// Writes v[j] to out[2j] and out[2j + 1] (j < 8): a per-32 factor as two per-16 ones.
inline void spread_pairs(const uint8_t* v, int16_t* out) {
#if defined(__AVX2__)
  uint64_t bytes;
  std::memcpy(&bytes, v, 8);
  const __m128i w = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)));
  // One 32-byte store: the dot product reads it back with one 32-byte load (store forwarding).
  const __m256i both = _mm256_set_m128i(_mm_unpackhi_epi16(w, w), _mm_unpacklo_epi16(w, w));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), both);
#else
  for (int j = 0; j < 8; ++j) out[2 * j] = out[2 * j + 1] = v[j];
#endif
}

// Q4_K / Q5_K: the eight 6-bit scales and mins of the 12 packed bytes s (layout in q4_k.h), four
// bytes at a time: bytes 0-3 hold scales 0-3 and the top bits of scales 4-7, bytes 4-7 the same
// for the mins, bytes 8-11 the low nibbles of scales and mins 4-7.
inline void k4_scales_mins(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3Fu, mn_lo = b & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | (((a >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0Fu) | (((b >> 6) & 0x03030303u) << 4);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(mn, &mn_lo, 4);
  std::memcpy(mn + 4, &mn_hi, 4);
}

inline void k4_factors_int(uint16_t d, uint16_t dmin, const uint8_t* scales, KLevels& lv) {
  uint8_t sc[8], mn[8];
  k4_scales_mins(scales, sc, mn);
  spread_pairs(sc, lv.sc);
  spread_pairs(mn, lv.mn);
  lv.d = simd::half_to_float(d);
  lv.dmin = simd::half_to_float(dmin);
}

struct UnpackQ4_K {
  using Block = BlockQ4_K;
  static void unpack(const Block& b, KLevels& lv) {
    k_nibbles(b.qs, reinterpret_cast<int8_t*>(lv.q));
    k4_factors_int(b.d, b.dmin, b.scales, lv);
  }
};

struct UnpackQ5_K {
  using Block = BlockQ5_K;
  static void unpack(const Block& b, KLevels& lv) {
    auto* q = reinterpret_cast<int8_t*>(lv.q);
    k_nibbles(b.qs, q);
    add_by_bit(b.qh, 16, 0, q);  // bit 4 of element 32j + l is bit j of qh[l]
    k4_factors_int(b.d, b.dmin, b.scales, lv);
  }
};

// Q6_K: w = d sc (q - 32), so the offset term is 32 sc times the activations' sum (dmin = d).
struct UnpackQ6_K {
  using Block = BlockQ6_K;
  // The layout of DecodeQ6_K::levels (decode.h), without the - 32.
  static void levels(const Block& b, uint8_t* q) {
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k) {
#if defined(__AVX2__)
        const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
        const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32 * (k & 1)));
        const __m256i lo = _mm256_and_si256(k < 2 ? lb : _mm256_srli_epi16(lb, 4), m4);
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
        const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), m2), 4);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * k), _mm256_or_si256(lo, hi));
#else
        for (int l = 0; l < 32; ++l) {
          const uint8_t lo_byte = b.ql[64 * h + 32 * (k & 1) + l];
          const int lo = k < 2 ? lo_byte & 0xF : lo_byte >> 4;
          q[128 * h + 32 * k + l] = static_cast<uint8_t>(lo | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4));
        }
#endif
      }
  }
  static void unpack(const Block& b, KLevels& lv) {
    levels(b, lv.q);
#if defined(__AVX2__)
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(lv.sc), sc);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lv.mn), _mm256_slli_epi16(sc, 5));
#else
    for (int s = 0; s < 16; ++s) {
      lv.sc[s] = b.scales[s];
      lv.mn[s] = static_cast<int16_t>(32 * b.scales[s]);
    }
#endif
    lv.d = lv.dmin = simd::half_to_float(b.d);
  }
};

}  // namespace
}  // namespace gl::cpu
