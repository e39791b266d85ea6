// quants/int8_dot.h - the FAST matrix rows (Precision::FAST) of Q4_K, Q5_K, Q6_K, Q8_0 and Q4_0:
// activation rows quantized to int8 blocks (int8_act.h), weight blocks unpacked to integer levels
// (int8_levels.h), products summed in int32 per block and scaled into float once per block.
//
//   using K = KQuantInt8<UnpackQ4_K>;
//   std::vector<char> a(K::act_row_bytes(k));
//   K::quantize_act(x, a.data(), k);
//   K::dot_rows(w_rows, nw, x_rows, nx, k, out, off);  // out[j][off + i] ~ w[i] . x[j]
//
// Every result is computed by the same operations in the same order whatever other rows share the
// call (the row groups only share the unpacked weights), so several rows give bit for bit the
// results of one row at a time, and the MTP verify of K + 1 rows reproduces K + 1 decode steps.
// K-quant weight rows are unpacked a chunk of blocks at a time and reused for every activation row
// of the call; the activation rows then go through in groups of kGroup (register tiles).
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "../simd.h"
#include "int8_act.h"
#include "int8_levels.h"

namespace gl::cpu {
namespace {

inline constexpr int kLevelChunk = 16;       // weight blocks unpacked at a time (5.6 KB)
inline constexpr int64_t kRowsPerPass = 64;  // activation rows whose accumulators are live
static_assert(kRowsPerPass % kGroup == 0, "groups must tile a pass");

#if defined(__AVX2__)
// Byte shuffles that give the 16 int16 lanes of maddubs(q[32t..], x[32t..]) their scales:
// lanes 0-7 scale sc[2t], lanes 8-15 sc[2t + 1], read from a copy of sc's half holding them.
inline __m256i k_scale_shuffle(int t) {
  const int u = t % 4;
  const auto lo = static_cast<char>(4 * u), hi = static_cast<char>(4 * u + 2);
  return _mm256_setr_epi8(lo, static_cast<char>(lo + 1), lo, static_cast<char>(lo + 1), lo, static_cast<char>(lo + 1),
                          lo, static_cast<char>(lo + 1), lo, static_cast<char>(lo + 1), lo, static_cast<char>(lo + 1),
                          lo, static_cast<char>(lo + 1), lo, static_cast<char>(lo + 1), hi, static_cast<char>(hi + 1),
                          hi, static_cast<char>(hi + 1), hi, static_cast<char>(hi + 1), hi, static_cast<char>(hi + 1),
                          hi, static_cast<char>(hi + 1), hi, static_cast<char>(hi + 1), hi, static_cast<char>(hi + 1),
                          hi, static_cast<char>(hi + 1));
}

// acc[j] += lv . x[j] for RX activation blocks (see int8_levels.h for the formula).
template <int RX>
inline void k_block_dot(const KLevels& lv, const ActQ8K* const* x, FAcc* acc) {
  const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(lv.sc));
  const __m256i halves[2] = {_mm256_permute2x128_si256(sc, sc, 0x00), _mm256_permute2x128_si256(sc, sc, 0x11)};
  __m256i isum[RX];
  for (int j = 0; j < RX; ++j) isum[j] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) {
    const __m256i s = _mm256_shuffle_epi8(halves[t / 4], k_scale_shuffle(t));
    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(lv.q + 32 * t));
#pragma GCC unroll 8
    for (int j = 0; j < RX; ++j) {
      // maddubs: |pair| <= 2 * 63 * 127 < 2^15; madd then applies the int16 scales.
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j]->qs + 32 * t));
      isum[j] = _mm256_add_epi32(isum[j], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xq), s));
    }
  }
  const __m256i mn = _mm256_load_si256(reinterpret_cast<const __m256i*>(lv.mn));
  for (int j = 0; j < RX; ++j) {
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j]->bsums));
    acc[j] = facc_add(acc[j], isum[j], lv.d * x[j]->d);
    acc[j] = facc_add(acc[j], _mm256_madd_epi16(mn, bs), -lv.dmin * x[j]->d);
  }
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
#endif

template <class U>
struct KQuantInt8 {
  using Block = typename U::Block;

  static int64_t act_row_bytes(int64_t k) { return k / kActKBlock * static_cast<int64_t>(sizeof(ActQ8K)); }
  static void quantize_act(const float* x, void* dst, int64_t k) { quantize_act_q8k(x, static_cast<ActQ8K*>(dst), k); }

  // acc[0 .. RX) += blocks [b0, b0 + n) of lv (unpacked from block b0 on) times x rows x[0 .. RX).
  template <int RX>
  static void group(const KLevels* lv, int64_t b0, int n, const void* const* x, FAcc* acc) {
    FAcc a[RX];
    for (int j = 0; j < RX; ++j) a[j] = acc[j];
    for (int b = 0; b < n; ++b) {
      const ActQ8K* xb[RX];
      for (int j = 0; j < RX; ++j) xb[j] = static_cast<const ActQ8K*>(x[j]) + b0 + b;
      k_block_dot<RX>(lv[b], xb, a);
    }
    for (int j = 0; j < RX; ++j) acc[j] = a[j];
  }

  template <int RX>
  static void group_n(int nx, const KLevels* lv, int64_t b0, int n, const void* const* x, FAcc* acc) {
    if constexpr (RX > 1) {
      if (nx < RX) return group_n<RX - 1>(nx, lv, b0, n, x, acc);
    }
    group<RX>(lv, b0, n, x, acc);
  }

  // One weight row times nx <= kRowsPerPass activation rows, results to out[j][col].
  static void row_pass(const Block* w, int64_t nb, const void* const* x, int64_t nx, float* const* out, int64_t col) {
    FAcc acc[kRowsPerPass];
    for (int64_t j = 0; j < nx; ++j) acc[j] = facc_zero();
    KLevels lv[kLevelChunk];
    for (int64_t b0 = 0; b0 < nb; b0 += kLevelChunk) {
      const int n = static_cast<int>(std::min<int64_t>(kLevelChunk, nb - b0));
      for (int b = 0; b < n; ++b) U::unpack(w[b0 + b], lv[b]);
      for (int64_t j0 = 0; j0 < nx; j0 += kGroup)
        group_n<kGroup>(static_cast<int>(std::min<int64_t>(kGroup, nx - j0)), lv, b0, n, x + j0, acc + j0);
    }
    for (int64_t j = 0; j < nx; ++j) out[j][col] = facc_sum(acc[j]);
  }

  // The DotRowsFn of dtype_kernels.h (x rows are quantize_act blocks).
  static void dot_rows(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                       int64_t out_off) {
    const int64_t nb = k / kActKBlock;
    for (int64_t j0 = 0; j0 < nx; j0 += kRowsPerPass)
      for (int i = 0; i < nw; ++i)
        row_pass(static_cast<const Block*>(w[i]), nb, x + j0, std::min(kRowsPerPass, nx - j0), out + j0, out_off + i);
  }
};

}  // namespace
}  // namespace gl::cpu
