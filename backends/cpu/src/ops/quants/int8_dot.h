// quants/int8_dot.h - the FAST matrix rows (Precision::FAST) of Q4_K, Q5_K, Q6_K, Q8_0 and Q4_0:
// activation rows quantized to int8 blocks (int8_act.h), weight blocks unpacked to integer levels
// (int8_levels.h), products summed in int32 per block and scaled into float once per block.
//
//   using K = KQuantInt8<LevelsQ4_K>;
//   std::vector<char> a(K::act_row_bytes(k));
//   K::quantize_act(x, a.data(), k);
//   K::dot_rows(w_rows, nw, x_rows, nx, k, out, off);  // out[j][off + i] ~ w[i] . x[j]
//
// Every result is computed by the same operations in the same order whatever other rows share the
// call (the row groups only share the unpacked weights), so several rows give bit for bit the
// results of one row at a time, and the MTP verify of K + 1 rows reproduces K + 1 decode steps.
// Weight blocks are unpacked in registers, once per group of kGroup activation rows (the register
// tile); without AVX2, into a KLevels on the stack.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "../simd.h"
#include "int8_act.h"
#include "int8_levels.h"

namespace gl::cpu {
namespace {

#if defined(__AVX2__)
// acc + madd(p, s), lane by lane: one vpdpwssd where the CPU has VNNI (the same wrapping int32
// sums, without saturation, as madd then add).
inline __m256i madd_add(__m256i acc, __m256i p, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, p, s);
#elif defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32(acc, p, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
#endif
}

// acc[j] += w . x[j] for RX activation blocks, the weight block w in registers (see
// int8_levels.h for the formula). maddubs: |pair| <= 2 * 63 * 127 < 2^15; madd then applies the
// int16 scales; |sum| < 2^31 for every level and scale the types allow.
template <int RX, class L>
inline void k_block_dot(const L& w, const ActQ8K* const* x, FAcc* acc) {
  __m256i isum[RX];
  for (int j = 0; j < RX; ++j) isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) {
    const __m256i q = w.levels(t), s = w.scales(t);
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) {
      const __m256i p =
          _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j]->qs + 32 * t)));
      isum[j] = madd_add(isum[j], p, s);
    }
  }
  for (int j = 0; j < RX; ++j) {
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j]->bsums));
    acc[j] = facc_add(acc[j], isum[j], w.d * x[j]->d);
    acc[j] = facc_add(acc[j], _mm256_madd_epi16(w.mn, bs), -w.dmin * x[j]->d);
  }
}

template <class L>
inline L k_levels(const typename L::Block& b) {
  return L(b);
}
#else
template <int RX>
inline void k_block_dot(const KLevels& lv, const ActQ8K* const* x, FAcc* acc) {
  for (int j = 0; j < RX; ++j) {
    int32_t isum = 0, imin = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t p = 0;
      for (int l = 16 * s; l < 16 * s + 16; ++l) p += lv.q[l] * x[j]->qs[l];
      isum += lv.sc[s] * p;
      imin += lv.mn[s] * x[j]->bsums[s];
    }
    acc[j] += lv.d * x[j]->d * static_cast<float>(isum);
    acc[j] += -lv.dmin * x[j]->d * static_cast<float>(imin);
  }
}

template <class L>
inline KLevels k_levels(const typename L::Block& b) {
  KLevels lv;
  L::unpack(b, lv);
  return lv;
}
#endif

template <class L>
struct KQuantInt8 : Int8RowGroups<KQuantInt8<L>, typename L::Block, kActKBlock> {
  using Block = typename L::Block;

  static int64_t act_row_bytes(int64_t k) { return k / kActKBlock * static_cast<int64_t>(sizeof(ActQ8K)); }
  static void quantize_act(const float* x, void* dst, int64_t k) { quantize_act_q8k(x, static_cast<ActQ8K*>(dst), k); }

  // out[j][col] = w . x[j] for RX activation rows.
  template <int RX>
  static void group(const Block* w, int64_t nb, const void* const* x, float* const* out, int64_t col) {
    FAcc acc[RX];
    for (int j = 0; j < RX; ++j) acc[j] = facc_zero();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead(w + b);
      const ActQ8K* xb[RX];
      for (int j = 0; j < RX; ++j) xb[j] = static_cast<const ActQ8K*>(x[j]) + b;
      k_block_dot<RX>(k_levels<L>(w[b]), xb, acc);
    }
    for (int j = 0; j < RX; ++j) out[j][col] = facc_sum(acc[j]);
  }
};

}  // namespace
}  // namespace gl::cpu
