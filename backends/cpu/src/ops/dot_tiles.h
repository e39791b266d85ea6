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
// Products of many activation rows (prefill) go by slabs: k is cut into chunks
// that stay in L1 while every tile of the slab passes, the partial-sum vectors
// waiting in memory between chunks, so each sum is added in the same order as
// a single row's and the bits never depend on how many rows are multiplied.
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

// The slab tile of the blocked products below (weight rows x activation rows). Under AVX2 3 x 4
// keeps its 12 sums, 3 weight vectors and one activation vector in the 16 registers (4 x 3 would
// reload every activation vector once per weight row).
#if defined(__AVX2__) && !defined(__AVX512F__)
constexpr int kSlabTileW = 3;
constexpr int kSlabTileX = 4;
#else
constexpr int kSlabTileW = kBlockW;
constexpr int kSlabTileX = kBlockX;
#endif
// k-chunk of the blocked products: this many floats of a slab's rows stay in L1 while its tiles
// take their turns.
constexpr int64_t kChunk = 256;
// Weight rows and activation rows whose sums a blocked product keeps in memory at once.
constexpr int kSlabW = 5 * kSlabTileW;
constexpr int kSlabX = 12 * kSlabTileX;

// Adds elements [k0, k1) (multiples of kLanes, and of the block of a blocked type) of RX activation rows times W weight
// rows stored as T to the sums a[j * W + i]. Every sum keeps one vector lane per residue of k mod kLanes, added in k
// order, so splitting k into chunks, the tile's shape, and computing a row with other rows or alone change no bit.
template <DType T, int W, int RX>
void dot_chunk(const void* const* w, const float* const* x, int64_t k0, int64_t k1, Vec* a,
               const void* const* next = nullptr) {
  // Pin the loaded vectors in registers where the tile leaves room (see simd::pin).
  constexpr bool kPin = RX > 1 && RX * W + W + 1 <= simd::kVecRegs;
  Vec acc[RX][W];
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) acc[j][i] = a[j * W + i];
  // Types with a scale per block (Q8_0) read it once per block and row, not once per vector.
  constexpr bool kScaled = requires(const void* r) { simd::Stored<T>::scale(r, int64_t{0}); };
  constexpr int64_t kStep = kScaled ? simd::Stored<T>::kBlock : kLanes;
  // Steps of about a 64-byte line of weights, where a tile given the next tile's rows asks for them.
  constexpr int64_t kLine =
      std::max<int64_t>(kStep, 64 * simd::Stored<T>::kBlock / simd::Stored<T>::kBlockBytes / kStep * kStep);
  for (int64_t kb = k0; kb < k1; kb += kStep) {
    if (next != nullptr && kb % kLine == 0) {
      const int64_t off = kb / simd::Stored<T>::kBlock * simd::Stored<T>::kBlockBytes;
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) __builtin_prefetch(static_cast<const char*>(next[i]) + off, 0, 3);
    }
    [[maybe_unused]] Vec d[W];
    if constexpr (kScaled) {
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) d[i] = simd::Stored<T>::scale(w[i], kb);
    }
#pragma GCC unroll 8
    for (int64_t kk = kb; kk < kb + kStep; kk += kLanes) {
      Vec wv[W];
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        if constexpr (kScaled) {
          wv[i] = simd::pin<kPin>(simd::Stored<T>::vec(w[i], kk, d[i]));
        } else {
          wv[i] = simd::pin<kPin>(simd::load_weights<T>(w[i], kk));
        }
      }
#pragma GCC unroll 16
      for (int j = 0; j < RX; ++j) {
        const Vec xv = simd::pin<kPin>(simd::vload(x[j] + kk));
#pragma GCC unroll 16
        for (int i = 0; i < W; ++i) acc[j][i] = simd::vfma(wv[i], xv, acc[j][i]);
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < RX; ++j)
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) a[j * W + i] = acc[j][i];
}

// dot_chunk for nx (1 .. RX) activation rows.
template <DType T, int W, int RX>
void dot_chunk_n(int nx, const void* const* w, const float* const* x, int64_t k0, int64_t k1, Vec* a,
                 const void* const* next = nullptr) {
  if constexpr (RX > 1) {
    if (nx < RX) return dot_chunk_n<T, W, RX - 1>(nx, w, x, k0, k1, a, next);
  }
  dot_chunk<T, W, RX>(w, x, k0, k1, a, next);
}

// Sums a[j * W + i] for j < nx, i < nw, reduced and completed with the row tails [kv, k).
template <DType T, int W>
void finish_tile(const Vec* a, int nx, const void* const* w, int nw, const float* const* x, int64_t kv, int64_t k,
                 float* const* out, int64_t off) {
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nw; ++i) {
      float s = simd::vsum(a[j * W + i]);
      for (int64_t kk = kv; kk < k; ++kk) s += simd::load_weight<T>(w[i], kk) * x[j][kk];
      out[j][off + i] = s;
    }
  }
}

// nx (1 .. kBlockX) activation rows times kBlockW weight rows stored as T (the first nw results
// stored), k in one piece. next (or null): the rows of the next tile, asked for a line at a time.
template <DType T>
void dot_tile(int nx, const void* const* w, int nw, const float* const* x, int64_t k, float* const* out, int64_t off,
              const void* const* next) {
  Vec acc[kBlockX * kBlockW];
  for (Vec& v : acc) v = simd::vzero();
  const int64_t kv = k - k % kLanes;
  dot_chunk_n<T, kBlockW, kBlockX>(nx, w, x, 0, kv, acc, next);
  finish_tile<T, kBlockW>(acc, nx, w, nw, x, kv, k, out, off);
}

// W weight rows from w[i0]: a short last group repeats its final row (only the first `in`
// results of a group are stored).
template <int W>
int weight_group(const void* const* w, int nw, int i0, const void** wp) {
  const int in = std::min(W, nw - i0);
  for (int i = 0; i < W; ++i) wp[i] = w[i0 + std::min(i, in - 1)];
  return in;
}

// The sums of dot_slab (tile a * gw + g holds activation rows a * kSlabTileX.., weight rows
// g * kSlabTileW..), reduced kLanes at a time by simd::vsum_lanes (finish_tile's bits) and
// completed with the row tails [kv, k).
template <DType T>
void finish_slab(const Vec* acc, int gw, const void* const* w, int nw, const float* const* x, int nx, int64_t kv,
                 int64_t k, float* const* out, int64_t off) {
  constexpr int kW = kSlabTileW, kX = kSlabTileX, kRound = (kSlabW + kLanes - 1) / kLanes * kLanes;
  Vec v[kRound];
  float s[kRound];
  for (int i = nw; i < kRound; ++i) v[i] = simd::vzero();
  for (int j = 0; j < nx; ++j) {
    const Vec* tiles = acc + j / kX * gw * (kX * kW) + j % kX * kW;
    for (int g = 0; g < gw; ++g)
      for (int i = 0; i < kW && g * kW + i < nw; ++i) v[g * kW + i] = tiles[g * (kX * kW) + i];
    for (int i0 = 0; i0 < nw; i0 += kLanes) simd::vsum_lanes(v + i0, s + i0);
    if (kv < k) {
      for (int i = 0; i < nw; ++i)
        for (int64_t kk = kv; kk < k; ++kk) s[i] += simd::load_weight<T>(w[i], kk) * x[j][kk];
    }
    std::copy(s, s + nw, out[j] + off);
  }
}

// Up to kSlabW weight rows times up to kSlabX activation rows, k split into kChunk pieces: a
// chunk of the slab's rows stays in L1 while every tile passes, instead of each tile streaming
// whole rows from L2. Bit-identical to dot_tile.
template <DType T>
void dot_slab(const void* const* w, int nw, const float* const* x, int nx, int64_t k, float* const* out, int64_t off) {
  constexpr int kW = kSlabTileW, kX = kSlabTileX, kTiles = kSlabW / kW * (kSlabX / kX);
  Vec acc[kTiles][kX * kW];
  const void* wp[kSlabW / kW][kW];
  const int gw = (nw + kW - 1) / kW, gx = (nx + kX - 1) / kX;
  for (int g = 0; g < gw; ++g) weight_group<kW>(w, nw, g * kW, wp[g]);
  for (int t = 0; t < gw * gx; ++t)
    for (Vec& v : acc[t]) v = simd::vzero();
  const int64_t kv = k - k % kLanes;
  for (int64_t k0 = 0; k0 < kv; k0 += kChunk) {
    const int64_t k1 = std::min(kv, k0 + kChunk);
    for (int a = 0; a < gx; ++a) {
      const int jn = std::min(kX, nx - a * kX);
      for (int g = 0; g < gw; ++g) dot_chunk_n<T, kW, kX>(jn, wp[g], x + a * kX, k0, k1, acc[a * gw + g]);
    }
  }
  finish_slab<T>(acc[0], gw, w, nw, x, nx, kv, k, out, off);
}

// out[j][out_off + i] = dot(w[i], x[j]) for weight rows stored as T and F32 activation rows
// (the DotRowsFn of dtype_kernels.h). Products of more than one activation group go by slabs.
template <DType T>
void dot_rows_f32x(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                   int64_t out_off) {
  const float* xf[kSlabX];
  for (int64_t j0 = 0; j0 < nx; j0 += kSlabX) {
    const int jn = static_cast<int>(std::min<int64_t>(kSlabX, nx - j0));
    for (int j = 0; j < jn; ++j) xf[j] = static_cast<const float*>(x[j0 + j]);
    if (jn > kBlockX) {
      for (int i0 = 0; i0 < nw; i0 += kSlabW)
        dot_slab<T>(w + i0, std::min(kSlabW, nw - i0), xf, jn, k, out + j0, out_off + i0);
      continue;
    }
    // Weights read in place stream from memory: each tile asks for the next tile's rows (the
    // hardware prefetcher alone restarts on every group of short rows).
    for (int a = 0; a < jn; a += kBlockX)
      for (int i0 = 0; i0 < nw; i0 += kBlockW) {
        const void* wp[kBlockW];
        const void* np[kBlockW];
        const int in = weight_group<kBlockW>(w, nw, i0, wp);
        const bool more = i0 + kBlockW < nw;
        if (more) weight_group<kBlockW>(w, nw, i0 + kBlockW, np);
        dot_tile<T>(std::min(kBlockX, jn - a), wp, in, xf + a, k, out + j0 + a, out_off + i0, more ? np : nullptr);
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
