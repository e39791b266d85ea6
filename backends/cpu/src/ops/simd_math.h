// simd_math.h - elementwise vector math on simd::Vec for the FAST kernels (attention_fast.cpp).
//
//   simd::Vec p = simd::vexp_neg(simd::vsub(s, simd::vset1(m)));   // softmax weights, s <= m
//   float mx = simd::vmax_all(v);
//
// vexp_neg is the Cephes polynomial for expf (range reduction by ln 2 in two parts, a degree-6
// polynomial on [-ln2/2, ln2/2], the exponent put in by integer shift): within 2 ulp of the
// correctly rounded exp for x in [-87.3, 0]; below -87.3 (and -inf) it gives 0, where exp is
// subnormal (< 1.2e-38). Its argument must not exceed 0 (softmax arguments x - max).
// Private to backends/cpu/src/ops, like simd.h.
#pragma once

#include <algorithm>
#include <cmath>

#include "simd.h"

namespace gl::cpu::simd {
namespace {

#if defined(__AVX512F__)
inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }
// Through memory: GCC 12 flags the undefined lanes of _mm512_reduce_max_ps (and of the shuffles
// it is made of) as uninitialized when inlined (PR 105593), fatal under -Werror.
inline float vmax_all(Vec a) {
  alignas(64) float t[16];
  _mm512_store_ps(t, a);
  return *std::max_element(t, t + 16);
}
// Lanes holding whole numbers n in [-126, 0]: 2^n.
inline Vec vexp2_int(Vec n) {
  const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}
inline Vec vround(Vec x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// y where x >= lo, else 0.
inline Vec vkeep_ge(Vec x, Vec lo, Vec y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), y); }
#elif defined(__AVX2__) && defined(__FMA__)
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
inline float vmax_all(Vec a) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
inline Vec vexp2_int(Vec n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}
inline Vec vround(Vec x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline Vec vkeep_ge(Vec x, Vec lo, Vec y) { return _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), y); }
#else
template <class F>
inline Vec lanes(Vec a, Vec b, F f) {
  for (int i = 0; i < kLanes; ++i) a.v[i] = f(a.v[i], b.v[i]);
  return a;
}
inline Vec vadd(Vec a, Vec b) {
  return lanes(a, b, [](float x, float y) { return x + y; });
}
inline Vec vsub(Vec a, Vec b) {
  return lanes(a, b, [](float x, float y) { return x - y; });
}
inline Vec vmax(Vec a, Vec b) {
  return lanes(a, b, [](float x, float y) { return x > y ? x : y; });
}
inline float vmax_all(Vec a) { return *std::max_element(a.v, a.v + kLanes); }
inline Vec vexp2_int(Vec n) {
  return lanes(n, n, [](float x, float) { return std::ldexp(1.0f, static_cast<int>(x)); });
}
inline Vec vround(Vec x) {
  return lanes(x, x, [](float a, float) { return std::nearbyint(a); });
}
inline Vec vkeep_ge(Vec x, Vec lo, Vec y) {
  for (int i = 0; i < kLanes; ++i) y.v[i] = x.v[i] >= lo.v[i] ? y.v[i] : 0.0f;
  return y;
}
#endif

// exp(x) for x <= 0 (see the file comment): 0 below -87.3.
inline Vec vexp_neg(Vec x) {
  const Vec lo = vset1(-87.3f);
  const Vec xc = vmax(x, lo);  // keeps -inf out of the arithmetic
  const Vec n = vround(vmul(xc, vset1(1.44269504088896341f)));
  Vec r = vfma(n, vset1(-0.693359375f), xc);  // x - n ln2, ln2 in two parts
  r = vfma(n, vset1(2.12194440e-4f), r);
  Vec p = vset1(1.9875691500e-4f);
  p = vfma(p, r, vset1(1.3981999507e-3f));
  p = vfma(p, r, vset1(8.3334519073e-3f));
  p = vfma(p, r, vset1(4.1665795894e-2f));
  p = vfma(p, r, vset1(1.6666665459e-1f));
  p = vfma(p, r, vset1(5.0000001201e-1f));
  const Vec y = vfma(p, vmul(r, r), vadd(r, vset1(1.0f)));  // 1 + r + r^2 p(r)
  return vkeep_ge(x, lo, vmul(y, vexp2_int(n)));
}

}  // namespace
}  // namespace gl::cpu::simd
