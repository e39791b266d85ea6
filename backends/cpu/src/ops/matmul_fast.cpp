// matmul_fast.cpp - vectorised weight-row conversion and the dot-product tiles of mul_mat.
//
// A tile keeps one vector of partial sums per (weight row, activation row)
// pair: every loaded weight vector is reused for kBlockX activation rows and
// every activation vector for kBlockW weight rows (explicit FMA, see simd.h).
// The tiles read weights either as floats (rows converted once by row_to_f32)
// or in their stored type, converting in registers; both give the same sums.
#include <algorithm>
#include <cstring>

#include "ggml-lite/status.h"
#include "matmul.h"
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

template <DType T, class Row>
void dot_rows_t(const Row* w, int nw, const float* const* x, int64_t nx, int64_t k, float* const* out,
                int64_t out_off) {
  for (int64_t j0 = 0; j0 < nx; j0 += kBlockX) {
    const int jn = static_cast<int>(std::min<int64_t>(kBlockX, nx - j0));
    for (int i0 = 0; i0 < nw; i0 += kBlockW) {
      const int in = std::min(kBlockW, nw - i0);
      // A short last group repeats its final row; only the first `in` results are stored.
      const void* wp[kBlockW];
      for (int i = 0; i < kBlockW; ++i) wp[i] = w[i0 + std::min(i, in - 1)];
      dot_tile_n<T, kBlockX>(jn, wp, in, x + j0, k, out + j0, out_off + i0);
    }
  }
}

template <DType T>
void convert_row(const void* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) simd::vstore(dst + i, simd::load_weights<T>(src, i));
  for (; i < n; ++i) dst[i] = simd::load_weight<T>(src, i);
}

}  // namespace

void row_to_f32(DType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::F16: convert_row<DType::F16>(src, dst, n); return;
    case DType::BF16: convert_row<DType::BF16>(src, dst, n); return;
    case DType::Q8_0: convert_row<DType::Q8_0>(src, dst, n); return;
    case DType::I32: to_float(type, src, dst, n); return;
  }
}

DotTileShape dot_tile_shape() { return {kBlockW, kBlockX}; }

void dot_rows(const float* const* w, int nw, const float* const* x, int64_t nx, int64_t k, float* const* out,
              int64_t out_off) {
  dot_rows_t<DType::F32>(w, nw, x, nx, k, out, out_off);
}

void dot_rows_stored(DType type, const void* const* w, int nw, const float* const* x, int64_t nx, int64_t k,
                     float* const* out, int64_t out_off) {
  switch (type) {
    case DType::F32: dot_rows_t<DType::F32>(w, nw, x, nx, k, out, out_off); return;
    case DType::F16: dot_rows_t<DType::F16>(w, nw, x, nx, k, out, out_off); return;
    case DType::BF16: dot_rows_t<DType::BF16>(w, nw, x, nx, k, out, out_off); return;
    case DType::Q8_0: dot_rows_t<DType::Q8_0>(w, nw, x, nx, k, out, out_off); return;
    case DType::I32: break;
  }
  GL_ASSERT(false, "[mul_mat] i32 weights have no dot product");
}

}  // namespace gl::cpu
