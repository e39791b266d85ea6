// simd.h - the float vector type of the CPU matrix kernels (matmul_fast.cpp, gemm.cpp).
//
//   simd::Vec acc = simd::vzero();
//   for (int64_t k = 0; k + simd::kLanes <= n; k += simd::kLanes)
//     acc = simd::vfma(simd::vload(a + k), simd::vload(b + k), acc);
//   float s = simd::vsum(acc);
//
// The backend is built with -ffp-contract=off and without fast-math, so the
// compiler will not vectorise a float reduction by itself; kernels keep vectors
// of independent partial sums and use explicit FMA. Vec is an AVX-512 or AVX2
// register where the target has one, else a plain 8-lane struct whose loops the
// compiler maps to whatever vector unit exists. The load_* helpers convert
// kLanes stored weights to floats exactly as gl::to_float does; Stored<T> says
// how a weight type is read (its block size and bytes, a vector, one element).
//
// Private to backends/cpu/src/ops: everything is in an unnamed namespace, since
// Vec depends on the target flags of the including file.
#pragma once

#include <cstdint>
#include <cstring>

#include "ggml-lite/dtype.h"

#if defined(__AVX2__) || defined(__AVX512F__) || defined(__F16C__)
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 headers (GCC PR 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#endif

namespace gl::cpu::simd {
namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec vset1(float a) { return _mm512_set1_ps(a); }
inline void vstore(float* p, Vec a) { _mm512_storeu_ps(p, a); }
inline float vsum(Vec a) { return _mm512_reduce_add_ps(a); }
inline Vec load_f16(const fp16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline Vec load_bf16(const bf16_t* p) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
inline Vec load_i8(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec vset1(float a) { return _mm256_set1_ps(a); }
inline void vstore(float* p, Vec a) { _mm256_storeu_ps(p, a); }
inline float vsum(Vec a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#if defined(__F16C__)
inline Vec load_f16(const fp16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#else
inline Vec load_f16(const fp16_t* p) {
  float t[kLanes];
  for (int i = 0; i < kLanes; ++i) t[i] = fp16_to_fp32(p[i]);
  return vload(t);
}
#endif
inline Vec load_bf16(const bf16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
inline Vec load_i8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
#else
struct Vec {
  float v[8];
};
constexpr int kLanes = 8;
inline Vec vzero() { return Vec{}; }
inline Vec vload(const float* p) {
  Vec r;
  std::memcpy(r.v, p, sizeof(r.v));
  return r;
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  for (int i = 0; i < kLanes; ++i) c.v[i] += a.v[i] * b.v[i];
  return c;
}
inline Vec vmul(Vec a, Vec b) {
  for (int i = 0; i < kLanes; ++i) a.v[i] *= b.v[i];
  return a;
}
inline Vec vset1(float a) {
  Vec r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = a;
  return r;
}
inline void vstore(float* p, Vec a) { std::memcpy(p, a.v, sizeof(a.v)); }
inline float vsum(Vec a) {
  float s = 0.0f;
  for (int i = 0; i < kLanes; ++i) s += a.v[i];
  return s;
}
inline Vec load_f16(const fp16_t* p) {
  Vec r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = fp16_to_fp32(p[i]);
  return r;
}
inline Vec load_bf16(const bf16_t* p) {
  Vec r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = bf16_to_fp32(p[i]);
  return r;
}
inline Vec load_i8(const int8_t* p) {
  Vec r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = static_cast<float>(p[i]);
  return r;
}
#endif

// out[r] = vsum(v[r]) for r < kLanes, to the bit: the lanes of kLanes vectors are added in
// vsum's pairs (lane i with i + kLanes/2, then i + kLanes/4, ...; float addition commutes), but
// transposed, so each level serves several vectors with one add (a few operations per sum
// instead of a whole horizontal reduction).
inline void vsum_lanes(const Vec* v, float* out) {
#if defined(__AVX512F__)
  __m512 h[8], q[4], e[2];
  for (int r = 0; r < 8; ++r)  // [v_2r | v_2r+1] lanes i + i+8
    h[r] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * r], v[2 * r + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * r], v[2 * r + 1], 0xEE));
  for (int r = 0; r < 4; ++r)  // 128-bit blocks [v_4r | v_4r+1 | v_4r+2 | v_4r+3], lanes i + i+4
    q[r] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * r], h[2 * r + 1], 0x88),
                         _mm512_shuffle_f32x4(h[2 * r], h[2 * r + 1], 0xDD));
  for (int r = 0; r < 2; ++r)  // block b: pairs of v_b+8r, v_b+8r+4 (lanes i + i+2)
    e[r] =
        _mm512_add_ps(_mm512_shuffle_ps(q[2 * r], q[2 * r + 1], 0x44), _mm512_shuffle_ps(q[2 * r], q[2 * r + 1], 0xEE));
  // block b: v_b, v_b+4, v_b+8, v_b+12; lane 4b + c holds the sum of v_4c+b.
  const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], 0x88), _mm512_shuffle_ps(e[0], e[1], 0xDD));
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(idx, t));
#elif defined(__AVX2__) && defined(__FMA__)
  __m256 h[4], e[2];
  for (int r = 0; r < 4; ++r)  // [v_2r | v_2r+1] lanes i + i+4
    h[r] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * r], v[2 * r + 1], 0x20),
                         _mm256_permute2f128_ps(v[2 * r], v[2 * r + 1], 0x31));
  for (int r = 0; r < 2; ++r)  // block b: pairs of v_b+4r, v_b+4r+2 (lanes i + i+2)
    e[r] =
        _mm256_add_ps(_mm256_shuffle_ps(h[2 * r], h[2 * r + 1], 0x44), _mm256_shuffle_ps(h[2 * r], h[2 * r + 1], 0xEE));
  // block b: v_b, v_b+2, v_b+4, v_b+6; lane 4b + c holds the sum of v_2c+b.
  const __m256 t = _mm256_add_ps(_mm256_shuffle_ps(e[0], e[1], 0x88), _mm256_shuffle_ps(e[0], e[1], 0xDD));
  _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(t, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
#else
  for (int r = 0; r < kLanes; ++r) out[r] = vsum(v[r]);
#endif
}

inline float half_to_float(fp16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return fp16_to_fp32(h);
#endif
}

// Vector registers of the target.
#if defined(__AVX512F__)
constexpr int kVecRegs = 32;
#else
constexpr int kVecRegs = 16;
#endif

// v, kept in a register when Pin: GCC otherwise folds a load used by several FMAs into each of
// them as a memory operand, and a tile whose sums fill the register file then waits on loads,
// not FMAs (3 x 4 F32 tiles under AVX2: 16 loads per 12 FMAs instead of 7).
template <bool Pin>
inline Vec pin(Vec v) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))  // Vec is a register type
  if constexpr (Pin) asm("" : "+x"(v));
#endif
  return v;
}

// How weights stored as T become floats: kBlock (elements per block, 1 for plain types),
// vec(row, k) for kLanes weights from element k and one(row, k) for a single one (row tails),
// both exactly as dtype_traits(T).to_float rounds them. The plain types are specialised here; a
// quantized type's specialisation sits in ops/quants/<type>.h.
template <DType T>
struct Stored;

template <>
struct Stored<DType::F32> {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t kBlockBytes = sizeof(float);
  static Vec vec(const void* row, int64_t k) { return vload(static_cast<const float*>(row) + k); }
  static float one(const void* row, int64_t k) { return static_cast<const float*>(row)[k]; }
};
template <>
struct Stored<DType::F16> {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t kBlockBytes = sizeof(fp16_t);
  static Vec vec(const void* row, int64_t k) { return load_f16(static_cast<const fp16_t*>(row) + k); }
  static float one(const void* row, int64_t k) { return fp16_to_fp32(static_cast<const fp16_t*>(row)[k]); }
};
template <>
struct Stored<DType::BF16> {
  static constexpr int64_t kBlock = 1;
  static constexpr int64_t kBlockBytes = sizeof(bf16_t);
  static Vec vec(const void* row, int64_t k) { return load_bf16(static_cast<const bf16_t*>(row) + k); }
  static float one(const void* row, int64_t k) { return bf16_to_fp32(static_cast<const bf16_t*>(row)[k]); }
};

// kLanes weights of a row stored as T, from element k (a multiple of kLanes), as floats.
template <DType T>
inline Vec load_weights(const void* row, int64_t k) {
  static_assert(Stored<T>::kBlock == 1 || Stored<T>::kBlock % kLanes == 0,
                "a vector load must not straddle the type's blocks");
  return Stored<T>::vec(row, k);
}

// One weight (element k) as a float, for row tails (rows of a blocked type have none).
template <DType T>
inline float load_weight(const void* row, int64_t k) {
  return Stored<T>::one(row, k);
}

}  // namespace
}  // namespace gl::cpu::simd
