// quants/int8_legacy.h - the FAST matrix rows of the 32-element types Q8_0 and Q4_0: activations
// quantized to blocks of 32 (int8_act.h), w . x = d_w d_x sum(q_w q_x) per block.
//
//   using K = LegacyInt8<UnpackQ8_0>;
//   K::quantize_act(x, buf, k);                          // K::act_row_bytes(k) bytes
//   K::dot_rows(w_rows, nw, x_rows, nx, k, out, off);    // out[j][off + i] ~ w[i] . x[j]
//
// Like int8_dot.h, each result takes the same operations whatever rows share the call.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "../simd.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q8_0.h"
#include "int8_act.h"

namespace gl::cpu {
namespace {

// One weight block as integers: AVX2 keeps unsigned levels (and Q8_0's signs), else signed ones.
struct Levels32 {
#if defined(__AVX2__)
  __m256i u;
  __m256i sign;
#else
  int8_t q[32];
#endif
  float d;
};

#if defined(__AVX2__)
// Signed weights times signed activations as |w| times sign(w) x (|w| <= 128 fits maddubs).
struct UnpackQ8_0 {
  using Block = BlockQ8_0;
  static Levels32 unpack(const Block& b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    return {_mm256_abs_epi8(w), w, simd::half_to_float(b.d)};
  }
  static __m256i dot(const Levels32& l, const ActQ8_32& x) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs));
    return dot_u8s8(l.u, _mm256_sign_epi8(xq, l.sign));
  }
};

// Levels 0..15 stand for q - 8: the - 8 comes off as 8 times the activations' sum (lane 0).
struct UnpackQ4_0 {
  using Block = BlockQ4_0;
  static Levels32 unpack(const Block& b) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return {_mm256_and_si256(both, _mm256_set1_epi8(0x0F)), _mm256_setzero_si256(), simd::half_to_float(b.d)};
  }
  static __m256i dot(const Levels32& l, const ActQ8_32& x) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs));
    return _mm256_sub_epi32(dot_u8s8(l.u, xq), _mm256_setr_epi32(8 * x.sum, 0, 0, 0, 0, 0, 0, 0));
  }
};
#else
struct UnpackQ8_0 {
  using Block = BlockQ8_0;
  static Levels32 unpack(const Block& b) {
    Levels32 l;
    std::memcpy(l.q, b.qs, 32);
    l.d = simd::half_to_float(b.d);
    return l;
  }
};
struct UnpackQ4_0 {
  using Block = BlockQ4_0;
  static Levels32 unpack(const Block& b) {
    Levels32 l;
    for (int j = 0; j < 16; ++j) {
      l.q[j] = static_cast<int8_t>((b.qs[j] & 0xF) - 8);
      l.q[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
    }
    l.d = simd::half_to_float(b.d);
    return l;
  }
};
#endif

// acc += l . x for one activation block.
template <class U>
inline FAcc legacy_block_dot(const Levels32& l, const ActQ8_32& x, FAcc acc) {
#if defined(__AVX2__)
  return facc_add(acc, U::dot(l, x), l.d * x.d);
#else
  int32_t s = 0;
  for (int i = 0; i < 32; ++i) s += l.q[i] * x.qs[i];
  return acc + l.d * x.d * static_cast<float>(s);
#endif
}

template <class U>
struct LegacyInt8 : Int8RowGroups<LegacyInt8<U>, typename U::Block, kActBlock> {
  using Block = typename U::Block;

  static int64_t act_row_bytes(int64_t k) { return k / kActBlock * static_cast<int64_t>(sizeof(ActQ8_32)); }
  static void quantize_act(const float* x, void* dst, int64_t k) {
    quantize_act_q8_32(x, static_cast<ActQ8_32*>(dst), k);
  }

  // out[j][col] = w . x[j] for RX activation rows.
  template <int RX>
  static void group(const Block* w, int64_t nb, const void* const* x, float* const* out, int64_t col) {
    FAcc acc[RX];
    for (int j = 0; j < RX; ++j) acc[j] = facc_zero();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead(w + b);
      const Levels32 l = U::unpack(w[b]);
#pragma GCC unroll 8
      for (int j = 0; j < RX; ++j) acc[j] = legacy_block_dot<U>(l, static_cast<const ActQ8_32*>(x[j])[b], acc[j]);
    }
    for (int j = 0; j < RX; ++j) out[j][col] = facc_sum(acc[j]);
  }
};

}  // namespace
}  // namespace gl::cpu
