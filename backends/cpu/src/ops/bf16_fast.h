// bf16_fast.h - the FAST matrix rows of BF16 weights: each activation row rounded to BF16 once
// (round to nearest even), then BF16 x BF16 products summed in float.
//
//   Bf16Fast::quantize_act(x, buf, k);                     // Bf16Fast::act_row_bytes(k) bytes
//   Bf16Fast::dot_rows(w_rows, nw, x_rows, nx, k, out, off); // out[j][off + i] ~ w[i] . x[j]
//
// With AVX512-BF16 a pair of elements is one lane of `vdpbf16ps` (32 products an instruction,
// against 16 for the exact path's FMA on converted weights), otherwise both operands are widened
// to float (exact) and multiplied with FMA. A product of two BF16 values is exact in float, so
// the only rounding beyond the exact path's is the activation's: |x - bf16(x)| <= 2^-9 |x|.
// Weight rows stream one at a time with the next row's bytes asked for ahead (as the int8 rows);
// each result takes the same operations whatever rows share the call.
// Private to backends/cpu/src/ops (unnamed namespace, like simd.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "quants/int8_act.h"
#include "simd.h"

namespace gl::cpu {
namespace {

struct Bf16Fast {
  static constexpr int64_t kBlock = 32;  // elements per step: one 64-byte line of weights
  // Weight rows a prefill group takes at once: 4 x kGroup sums, 4 weight and one activation vector
  // fit the 32 AVX-512 registers (+7-22% pp128 over 2 rows on the 0.8B BF16 file); 16 AVX2
  // registers hold 2 x kGroup.
#if defined(__AVX512F__)
  static constexpr int kWide = 4;
#else
  static constexpr int kWide = 2;
#endif
  struct Block {
    bf16_t v[kBlock];
  };

  static int64_t act_row_bytes(int64_t k) { return k * static_cast<int64_t>(sizeof(bf16_t)); }
  static void quantize_act(const float* x, void* dst, int64_t k) {
    auto* y = static_cast<bf16_t*>(dst);
    for (int64_t i = 0; i < k; ++i) y[i] = fp32_to_bf16(x[i]);
  }

#if defined(__AVX512BF16__) && defined(__AVX512F__)
  using Acc = __m512;
  static Acc acc_zero() { return _mm512_setzero_ps(); }
  // Lanes summed through memory: GCC 12 flags _mm512_reduce_add_ps's undefined upper half as
  // uninitialized when inlined here (PR 105593), and -Werror makes that fatal.
  static float acc_sum(Acc a) {
    alignas(64) float t[16];
    _mm512_store_ps(t, a);
    for (int w = 8; w > 0; w /= 2)
      for (int i = 0; i < w; ++i) t[i] += t[i + w];
    return t[0];
  }
  static Acc block_dot(const Block& w, const bf16_t* x, Acc acc) {
    const __m512i wv = _mm512_loadu_si512(w.v);
    const __m512i xv = _mm512_loadu_si512(x);
    return _mm512_dpbf16_ps(acc, (__m512bh)wv, (__m512bh)xv);
  }
#else
  using Acc = simd::Vec;
  static Acc acc_zero() { return simd::vzero(); }
  static float acc_sum(Acc a) { return simd::vsum(a); }
  static Acc block_dot(const Block& w, const bf16_t* x, Acc acc) {
#pragma GCC unroll 4
    for (int64_t i = 0; i < kBlock; i += simd::kLanes)
      acc = simd::vfma(simd::load_bf16(w.v + i), simd::load_bf16(x + i), acc);
    return acc;
  }
#endif

  // out[j][col + i] = w[i] . x[j] for W weight rows and RX activation rows of k elements.
  template <int W, int RX>
  static void group(const bf16_t* const* w, int64_t k, const void* const* x, float* const* out, int64_t col) {
    const int64_t nb = k / kBlock;
    Acc acc[W][RX];
    for (int i = 0; i < W; ++i)
      for (int j = 0; j < RX; ++j) acc[i][j] = acc_zero();
    for (int64_t b = 0; b < nb; ++b) {
      prefetch_ahead(reinterpret_cast<const Block*>(w[W - 1]) + b);
#pragma GCC unroll 8
      for (int i = 0; i < W; ++i) {
        const Block& wb = reinterpret_cast<const Block*>(w[i])[b];
#pragma GCC unroll 8
        for (int j = 0; j < RX; ++j)
          acc[i][j] = block_dot(wb, static_cast<const bf16_t*>(x[j]) + b * kBlock, acc[i][j]);
      }
    }
    for (int i = 0; i < W; ++i)
      for (int j = 0; j < RX; ++j) {
        float s = acc_sum(acc[i][j]);
        const auto* xj = static_cast<const bf16_t*>(x[j]);
        for (int64_t e = nb * kBlock; e < k; ++e) s += bf16_to_fp32(w[i][e]) * bf16_to_fp32(xj[e]);
        out[j][col + i] = s;
      }
  }

  template <int W, int RX>
  static void group_n(int nx, const bf16_t* const* w, int64_t k, const void* const* x, float* const* out, int64_t col) {
    if constexpr (RX > 1) {
      if (nx < RX) return group_n<W, RX - 1>(nx, w, k, x, out, col);
    }
    group<W, RX>(w, k, x, out, col);
  }

  // The DotRowsFn of dtype_kernels.h (x rows are quantize_act rows): groups of up to kGroup
  // activation rows go over the weight rows (in cache after the first group). A decode's few
  // rows take one weight row at a time (one stream, asked for ahead); more rows take kWide, so each
  // activation vector loaded serves kWide products.
  static void dot_rows(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                       int64_t out_off) {
    const auto* wr = reinterpret_cast<const bf16_t* const*>(w);
    const bool many = nx > kGroup;
    for (int64_t j0 = 0; j0 < nx; j0 += kGroup) {
      const int jn = static_cast<int>(std::min<int64_t>(kGroup, nx - j0));
      int i = 0;
      for (; many && i + kWide <= nw; i += kWide) group_n<kWide, kGroup>(jn, wr + i, k, x + j0, out + j0, out_off + i);
      for (; i < nw; ++i) group_n<1, kGroup>(jn, wr + i, k, x + j0, out + j0, out_off + i);
    }
  }
};

}  // namespace
}  // namespace gl::cpu
