// quant_search.h - scale searches shared by the reference quantizers (internal).
//
//   int8_t L[16];
//   float d = fit_symmetric(16, 32, x, L, SymWeight::SQUARE, nullptr);  // Q6_K sub-block
//   uint8_t U[32]; float neg_min;
//   float s = fit_affine(32, 15, x, w, U, neg_min, {-1.0f, 0.1f, 20, false});  // Q4_K sub-block
//
// These reproduce the choices of llama.cpp's reference quantizers (which grid of candidate
// scales, which error weights, round-half-to-even) so that our files have the same error as
// theirs; the code is our own.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace gl::quant {

// Below this a group counts as all zeros.
inline constexpr float kGroupEps = 1e-15f;

// Round to nearest, ties to even (the default FP rounding mode), as an int. Up to 2^22 - 1 in
// magnitude, adding 1.5 * 2^23 keeps the exponent and leaves the rounded integer in the low
// mantissa bits: the same result as std::nearbyint, which is a library call here (~10% of a
// Q4_K_M quantization in perf). (At 2^22 - 0.5 the sum would round up to 2^24.)
inline int round_even(float v) {
  if (std::fabs(v) <= 4194303.0f) {
    const float shifted = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
  }
  return static_cast<int>(std::nearbyint(v));
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

inline float to_f(int v) { return static_cast<float>(v); }

// Weight of each element in the least-squares fit of a symmetric scale.
enum class SymWeight : uint8_t { NONE, SQUARE };

// Symmetric fit d * (L - nmax) ~= x, L in [0, 2 nmax): starts at d = max / -nmax and tries 18
// nearby scales, keeping the best weighted least-squares d. qw (importance) overrides weight.
float fit_symmetric(int n, int nmax, const float* x, int8_t* L, SymWeight weight, const float* qw);

// Q3_K's variant: starts like fit_symmetric, then moves single elements to a better level while
// the x^2-weighted fit improves (at most 5 sweeps). L in [0, 2 nmax).
float fit_symmetric_refine(int n, int nmax, const float* x, int8_t* L);

struct AffineSearch {
  float rmin;    // first candidate: (nmax + rmin) / (max - min)
  float rdelta;  // step between candidates
  int nstep;     // candidates after the first
  bool use_mad;  // absolute instead of squared error
};

// Affine fit scale * L - neg_min ~= x with L in [0, nmax] and neg_min >= 0 (the min is kept <= 0),
// weighted by w; returns scale and sets neg_min.
float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float& neg_min, AffineSearch search);

// Fit d * L ~= x for non-negative x (the sub-block scales or mins of Q4_K / Q5_K under an
// imatrix), L in [0, nmax], weighted by w: 9 candidate scales, then single-element moves while
// the fit improves (at most 5 sweeps). Returns d.
float fit_positive(int n, int nmax, const float* x, uint8_t* L, const float* w);

// Index of the level nearest to v in an ascending table of 16 int8 levels (the upper one on ties).
int nearest_level(const int8_t* levels, float v);

// Q4_K / Q5_K: 6-bit scale and min of sub-block j in the 12-byte packed array.
void pack_scale_min_k4(int j, int ls, int lm, uint8_t* scales);
void unpack_scale_min_k4(int j, const uint8_t* scales, int& ls, int& lm);

}  // namespace gl::quant
