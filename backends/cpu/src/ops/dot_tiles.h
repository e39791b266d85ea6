// dot_tiles.h - the register-tiled dot products and row conversions of mul_mat, templated on
// the weight type (instantiated once per table row in dtype_kernels.cpp).
//
//   dot_rows_f32x<DType::Q8_0>(w_rows, nw, x_rows, nx, K, out, off);  // out[j][off + i] = w[i] . x[j]
//   stored_row_to_f32<DType::BF16>(row, buf, K);
//
// A tile keeps one vector of partial sums per (weight row, activation row)
// pair: every loaded weight vector is reused for kBlockX activation rows and
// every activation vector for kBlockW weight rows (explicit FMA, see simd.h).
// Weights are read through simd::Stored<T>, so the tiles know nothing of any
// type's layout; both entries give the sums of converting the row first.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "quants/q8_0.h"
#include "simd.h"

namespace gl::cpu {
namespace {

using simd::kLanes;
using simd::Vec;

// Register tiles (accumulators + one vector per weight row + one activation vector must fit the
// register file); 5 x 5 measured fastest on the AVX-512 dev machine, 4 x 3 under AVX2.
#if defined(__AVX512F__)
constexpr int kBlockW = 5;
constexpr int kBlockX = 5;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kBlockW = 4;
constexpr int kBlockX = 3;
#else
constexpr int kBlockW = 4;
constexpr int kBlockX = 2;
#endif

// RX activation rows times kBlockW weight rows stored as T (the first nw results stored).
template <DType T, int RX>
void dot_tile(const void* const* w, int nw, const float* const* x, int64_t k, float* const* out, int64_t off) {
  Vec acc[RX][kBlockW];
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j)
#pragma GCC unroll 16
    for (int i = 0; i < kBlockW; ++i) acc[j][i] = simd::vzero();
  const int64_t kv = k - k % kLanes;
  for (int64_t kk = 0; kk < kv; kk += kLanes) {
    Vec wv[kBlockW];
#pragma GCC unroll 16
    for (int i = 0; i < kBlockW; ++i) wv[i] = simd::load_weights<T>(w[i], kk);
#pragma GCC unroll 16
    for (int j = 0; j < RX; ++j) {
      const Vec xv = simd::vload(x[j] + kk);
#pragma GCC unroll 16
      for (int i = 0; i < kBlockW; ++i) acc[j][i] = simd::vfma(wv[i], xv, acc[j][i]);
    }
  }
  for (int j = 0; j < RX; ++j) {
    for (int i = 0; i < nw; ++i) {
      float s = simd::vsum(acc[j][i]);
      for (int64_t kk = kv; kk < k; ++kk) s += simd::load_weight<T>(w[i], kk) * x[j][kk];
      out[j][off + i] = s;
    }
  }
}

// dot_tile for nx (1 .. RX) activation rows.
template <DType T, int RX>
void dot_tile_n(int nx, const void* const* w, int nw, const float* const* x, int64_t k, float* const* out,
                int64_t off) {
  if constexpr (RX > 1) {
    if (nx < RX) return dot_tile_n<T, RX - 1>(nx, w, nw, x, k, out, off);
  }
  dot_tile<T, RX>(w, nw, x, k, out, off);
}

// out[j][out_off + i] = dot(w[i], x[j]) for weight rows stored as T and F32 activation rows
// (the DotRowsFn of dtype_kernels.h).
template <DType T>
void dot_rows_f32x(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                   int64_t out_off) {
  for (int64_t j0 = 0; j0 < nx; j0 += kBlockX) {
    const int jn = static_cast<int>(std::min<int64_t>(kBlockX, nx - j0));
    const float* xf[kBlockX];
    for (int j = 0; j < jn; ++j) xf[j] = static_cast<const float*>(x[j0 + j]);
    for (int i0 = 0; i0 < nw; i0 += kBlockW) {
      const int in = std::min(kBlockW, nw - i0);
      // A short last group repeats its final row; only the first `in` results are stored.
      const void* wp[kBlockW];
      for (int i = 0; i < kBlockW; ++i) wp[i] = w[i0 + std::min(i, in - 1)];
      dot_tile_n<T, kBlockX>(jn, wp, in, xf, k, out + j0, out_off + i0);
    }
  }
}

// n weights stored as T -> floats, a vector at a time (the RowToF32Fn of dtype_kernels.h).
template <DType T>
void stored_row_to_f32(const void* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) simd::vstore(dst + i, simd::load_weights<T>(src, i));
  for (; i < n; ++i) dst[i] = simd::load_weight<T>(src, i);
}

}  // namespace
}  // namespace gl::cpu
