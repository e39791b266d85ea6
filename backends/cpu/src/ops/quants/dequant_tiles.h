// quants/dequant_tiles.h - the exact CPU path of the llama.cpp quant family (Q4_0 .. Q6_K, IQ4_NL,
// IQ4_XS, MXFP4): weights are decoded by the type's own dequantizer, activations stay F32.
//
//   using K = DequantKernels<BlockQ4_K, dequantize_row_q4_k, kQ4_KBlock>;
//   K::row_to_f32(row, buf, K);                      // == dtype_traits(Q4_K).to_float, bit for bit
//   K::dot_rows(w_rows, nw, x_rows, nx, K, out, off);  // out[j][off + i] = w[i] . x[j]
//
// dot_rows reads weight rows in place: each tile decodes a chunk of 256 elements of its weight
// rows into a small stack buffer with the reference dequantizer, then runs the same FMA tile as
// the F32 weights (dot_tiles.h) over it. The partial sums run over k in the same lane order as
// converting whole rows first, so both matmul paths (in place and converted scratch) give the
// same bits, and every weight is exactly the value gguf-py's dequantizer gives.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "../simd.h"

namespace gl::cpu {
namespace {

// Elements of a weight row decoded per step (a multiple of every block size: K-quants are 256).
constexpr int64_t kDequantChunk = 256;

template <class Block, void (*Dequant)(const Block*, float*, int64_t), int64_t kBlock>
struct DequantKernels {
  static_assert(kDequantChunk % kBlock == 0 && kBlock % simd::kLanes == 0, "blocks must tile the chunk and vectors");

  static void row_to_f32(const void* src, float* dst, int64_t n) { Dequant(static_cast<const Block*>(src), dst, n); }

  // Decodes elements [k0, k0 + m) of each of the nw rows of w into buf (rows kDequantChunk apart).
  static void decode_chunk(const void* const* w, int nw, int64_t k0, int64_t m, float* buf) {
    for (int i = 0; i < nw; ++i)
      Dequant(static_cast<const Block*>(w[i]) + k0 / kBlock, buf + i * kDequantChunk, m);
  }

  // RX activation rows times NW weight rows (the first nw results stored).
  template <int NW, int RX>
  static void tile(const void* const* w, int nw, const float* const* x, int64_t k, float* const* out, int64_t off) {
    simd::Vec acc[RX][NW];
    for (int j = 0; j < RX; ++j)
      for (int i = 0; i < NW; ++i) acc[j][i] = simd::vzero();
    alignas(64) float buf[NW * kDequantChunk];
    for (int64_t k0 = 0; k0 < k; k0 += kDequantChunk) {
      const int64_t m = std::min(kDequantChunk, k - k0);
      decode_chunk(w, NW, k0, m, buf);
      for (int64_t kk = 0; kk < m; kk += simd::kLanes) {
        simd::Vec wv[NW];
#pragma GCC unroll 16
        for (int i = 0; i < NW; ++i) wv[i] = simd::vload(buf + i * kDequantChunk + kk);
#pragma GCC unroll 16
        for (int j = 0; j < RX; ++j) {
          const simd::Vec xv = simd::vload(x[j] + k0 + kk);
#pragma GCC unroll 16
          for (int i = 0; i < NW; ++i) acc[j][i] = simd::vfma(wv[i], xv, acc[j][i]);
        }
      }
    }
    for (int j = 0; j < RX; ++j)
      for (int i = 0; i < nw; ++i) out[j][off + i] = simd::vsum(acc[j][i]);
  }

  template <int NW, int RX>
  static void tile_n(int nx, const void* const* w, int nw, const float* const* x, int64_t k, float* const* out,
                     int64_t off) {
    if constexpr (RX > 1) {
      if (nx < RX) return tile_n<NW, RX - 1>(nx, w, nw, x, k, out, off);
    }
    tile<NW, RX>(w, nw, x, k, out, off);
  }

  // The DotRowsFn of dtype_kernels.h (F32 activation rows).
  static void dot_rows(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                       int64_t out_off) {
    constexpr int kW = 4, kX = 3;  // weight rows per tile reuse each activation vector kW times
    for (int64_t j0 = 0; j0 < nx; j0 += kX) {
      const int jn = static_cast<int>(std::min<int64_t>(kX, nx - j0));
      const float* xf[kX];
      for (int j = 0; j < jn; ++j) xf[j] = static_cast<const float*>(x[j0 + j]);
      for (int i0 = 0; i0 < nw; i0 += kW) {
        const int in = std::min(kW, nw - i0);
        // A short last group repeats its final row; only the first `in` results are stored.
        const void* wp[kW];
        for (int i = 0; i < kW; ++i) wp[i] = w[i0 + std::min(i, in - 1)];
        tile_n<kW, kX>(jn, wp, in, xf, k, out + j0, out_off + i0);
      }
    }
  }
};

}  // namespace
}  // namespace gl::cpu
