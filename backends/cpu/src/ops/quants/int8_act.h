// quants/int8_act.h - activations of the FAST matrix rows (int8_dot.h): each F32 row quantized
// on its own to int8 blocks, and the integer dot products that read them.
//
//   std::vector<ActQ8K> a(k / kActKBlock);
//   quantize_act_q8k(x, a.data(), k);    // per 256: d = max|x| / 127, q = round(x / d), sums of 16
//   FAcc acc = facc_zero(); ... float s = facc_sum(acc);
//
// Rounding: q = round-to-nearest-even(x * (127 / max|x|)), so |x - d q| <= d / 2 = max|x| / 254
// per element, the only error of the FAST path (weights are unpacked exactly). The AVX2 code and
// the plain loops give the same blocks. A block of zeros has d = 0 and q = 0.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "../simd.h"

namespace gl::cpu {
namespace {

inline constexpr int kActKBlock = 256;  // K-quant activations (Q8_K-like)
inline constexpr int kActBlock = 32;    // legacy-type activations (Q8_0-like)
inline constexpr int kGroup = 4;        // activation rows per register tile of the dot products
// The int8 kernels' (Int8RowGroups) tile: 8 rows where AVX-512VL gives 32 vector registers (8
// int32 and 8 float accumulators beside the weight vectors), else kGroup.
#if defined(__AVX512VL__)
inline constexpr int kInt8Group = 8;
#else
inline constexpr int kInt8Group = kGroup;
#endif

struct ActQ8K {
  int8_t qs[kActKBlock];
  int16_t bsums[kActKBlock / 16];  // sum of each 16 quants (the offset terms of the weights)
  float d;
};

struct ActQ8_32 {
  int8_t qs[kActBlock];
  float d;
  int32_t sum;  // sum of the quants
};

// q[i] = round(x[i] * 127 / max|x|) for n (a multiple of 32) elements; returns d = max|x| / 127.
inline float quantize_int8(const float* x, int8_t* q, int n) {
  float amax = 0.0f;
#if defined(__AVX2__)
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float v : lanes) amax = std::max(amax, v);
#else
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
#endif
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
#if defined(__AVX2__)
  const __m256 vid = _mm256_set1_ps(id);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int i = 0; i < n; i += 32) {
    __m256i v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), vid));
    // The packs interleave 128-bit lanes; the permute puts the 32 bytes back in element order.
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(p, order));
  }
#else
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
#endif
  return amax / 127.0f;
}

inline int32_t sum_int8(const int8_t* q, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += q[i];
  return s;
}

// k (a multiple of 256) floats -> k / 256 blocks.
inline void quantize_act_q8k(const float* x, ActQ8K* y, int64_t k) {
  for (int64_t b = 0; b < k / kActKBlock; ++b) {
    y[b].d = quantize_int8(x + b * kActKBlock, y[b].qs, kActKBlock);
    for (int s = 0; s < kActKBlock / 16; ++s) y[b].bsums[s] = static_cast<int16_t>(sum_int8(y[b].qs + 16 * s, 16));
  }
}

// k (a multiple of 32) floats -> k / 32 blocks.
inline void quantize_act_q8_32(const float* x, ActQ8_32* y, int64_t k) {
  for (int64_t b = 0; b < k / kActBlock; ++b) {
    y[b].d = quantize_int8(x + b * kActBlock, y[b].qs, kActBlock);
    y[b].sum = sum_int8(y[b].qs, kActBlock);
  }
}

// Asks for the weight bytes kPrefetchBytes on from p (the rows after this one stream from memory:
// the hardware prefetcher alone left a decode GEMV at half the memory bandwidth here).
inline constexpr int64_t kPrefetchBytes = 2048;
template <class Block>
inline void prefetch_ahead(const Block* p) {
  const char* c = reinterpret_cast<const char*>(p) + kPrefetchBytes;
  for (size_t off = 0; off < sizeof(Block); off += 64) __builtin_prefetch(c + off, 0, 3);
}

// The float accumulator of one (weight row, activation row) result: a vector of partial sums
// under AVX2 (summed once at the end), a float otherwise.
#if defined(__AVX2__)
using FAcc = __m256;
inline FAcc facc_zero() { return _mm256_setzero_ps(); }
inline float facc_sum(FAcc a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// acc += scale * float(v), lane by lane.
inline FAcc facc_add(FAcc acc, __m256i v, float scale) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(scale), acc);
}

// 8 int32 lanes, each the sum of 4 products of unsigned u and signed s bytes.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  // maddubs saturates at 2^15: u <= 128 and |s| <= 127 keep each pair below it.
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}
#else
using FAcc = float;
inline FAcc facc_zero() { return 0.0f; }
inline float facc_sum(FAcc a) { return a; }
#endif

// The row loop every int8 kernel shares (CRTP): groups of up to kInt8Group activation rows go over
// each weight row (in cache after the first group); Impl::group<RX>(w, nb, x, out, col) does one
// group of RX rows, whose activation rows are blocks of kElems elements.
template <class Impl, class Block, int64_t kElems>
struct Int8RowGroups {
  template <int RX>
  static void group_n(int nx, const Block* w, int64_t nb, const void* const* x, float* const* out, int64_t col) {
    if constexpr (RX > 1) {
      if (nx < RX) return group_n<RX - 1>(nx, w, nb, x, out, col);
    }
    Impl::template group<RX>(w, nb, x, out, col);
  }

  // The DotRowsFn of dtype_kernels.h (x rows are Impl::quantize_act blocks).
  static void dot_rows(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                       int64_t out_off) {
    const int64_t nb = k / kElems;
    for (int64_t j0 = 0; j0 < nx; j0 += kInt8Group)
      for (int i = 0; i < nw; ++i)
        group_n<kInt8Group>(static_cast<int>(std::min<int64_t>(kInt8Group, nx - j0)), static_cast<const Block*>(w[i]),
                            nb, x + j0, out + j0, out_off + i);
  }
};

}  // namespace
}  // namespace gl::cpu
