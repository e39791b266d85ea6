// k_quants_low.cpp - reference quantizers and dequantizers of Q2_K and Q3_K.
//
// Both use sub-blocks of 16. Dequantizers evaluate as ggml's reference and gguf-py do, so they
// are bit-exact with them; quantizers follow llama.cpp's reference choices (Q2_K: a weighted
// affine search with absolute error; Q3_K: a symmetric fit refined element by element).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q2_k.h"
#include "ggml-lite/quants/q3_k.h"
#include "ggml-lite/status.h"
#include "quant_search.h"

namespace gl {

using quant::clamp_int;
using quant::round_even;
using quant::to_f;

namespace {

constexpr int kSub = 16;
constexpr int kSubs = kQ2_KBlock / kSub;

// 2-bit levels of element i = 128h + 32k + l live in bits 2k of byte 32h + l (Q2_K and Q3_K).
int two_bits(const uint8_t* qs, int i) { return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3; }

void pack_two_bits(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* p = L + 128 * h + l;
      qs[32 * h + l] = static_cast<uint8_t>(p[0] | (p[32] << 2) | (p[64] << 4) | (p[96] << 6));
    }
}

// Q3_K: signed 6-bit scale j, stored + 32, from its 12-byte packing.
int q3_scale(const uint8_t* s, int j) {
  const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

void q3_pack_scale(int j, int l, uint8_t* s) {
  if (j < 8)
    s[j] = static_cast<uint8_t>(l & 0xF);
  else
    s[j - 8] = static_cast<uint8_t>(s[j - 8] | ((l & 0xF) << 4));
  s[8 + j % 4] = static_cast<uint8_t>(s[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t n) {
  GL_ASSERT(n % kQ2_KBlock == 0, "q2_K row length must be a multiple of 256");
  constexpr float kLevels = 15.0f;  // 4-bit scales and mins
  for (int64_t b = 0; b < n / kQ2_KBlock; ++b) {
    const float* xb = x + b * kQ2_KBlock;
    uint8_t L[kQ2_KBlock];
    float scales[kSubs], mins[kSubs], w[kSub];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < kSubs; ++j) {
      for (int l = 0; l < kSub; ++l) w[l] = std::fabs(xb[kSub * j + l]);
      scales[j] = quant::fit_affine(kSub, 3, xb + kSub * j, w, L + kSub * j, mins[j], {-0.5f, 0.1f, 15, true});
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    BlockQ2_K& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    if (max_scale > 0.0f) {
      const float iscale = kLevels / max_scale;
      for (int j = 0; j < kSubs; ++j) blk.scales[j] = static_cast<uint8_t>(round_even(iscale * scales[j]));
      blk.d = fp32_to_fp16(max_scale / kLevels);
    }
    if (max_min > 0.0f) {
      const float iscale = kLevels / max_min;
      for (int j = 0; j < kSubs; ++j)
        blk.scales[j] = static_cast<uint8_t>(blk.scales[j] | (round_even(iscale * mins[j]) << 4));
      blk.dmin = fp32_to_fp16(max_min / kLevels);
    }
    // Redo the levels against the stored scales and mins.
    for (int j = 0; j < kSubs; ++j) {
      const float d = fp16_to_fp32(blk.d) * to_f(blk.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_fp32(blk.dmin) * to_f(blk.scales[j] >> 4);
      for (int l = 0; l < kSub; ++l)
        L[kSub * j + l] = static_cast<uint8_t>(clamp_int(round_even((xb[kSub * j + l] + dm) / d), 0, 3));
    }
    pack_two_bits(L, blk.qs);
  }
}

void dequantize_row_q2_k(const BlockQ2_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ2_KBlock == 0, "q2_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ2_KBlock; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    float* yb = y + b * kQ2_KBlock;
    for (int j = 0; j < kSubs; ++j) {
      const float dl = d * to_f(x[b].scales[j] & 0xF), ml = dmin * to_f(x[b].scales[j] >> 4);
      for (int l = 0; l < kSub; ++l) yb[kSub * j + l] = dl * to_f(two_bits(x[b].qs, kSub * j + l)) - ml;
    }
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t n) {
  GL_ASSERT(n % kQ3_KBlock == 0, "q3_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ3_KBlock; ++b) {
    const float* xb = x + b * kQ3_KBlock;
    int8_t L[kQ3_KBlock];
    float scales[kSubs];
    float max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < kSubs; ++j) {
      scales[j] = quant::fit_symmetric_refine(kSub, 4, xb + kSub * j, L + kSub * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ3_K& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kSubs; ++j)
        q3_pack_scale(j, clamp_int(round_even(iscale * scales[j]), -32, 31) + 32, blk.scales);
      blk.d = fp32_to_fp16(1.0f / iscale);
    }
    // Redo the levels against the stored scales (sub-blocks with a zero scale keep the fit's).
    for (int j = 0; j < kSubs; ++j) {
      const float d = fp16_to_fp32(blk.d) * to_f(q3_scale(blk.scales, j));
      if (d == 0.0f) continue;
      for (int l = 0; l < kSub; ++l)
        L[kSub * j + l] = static_cast<int8_t>(clamp_int(round_even(xb[kSub * j + l] / d), -4, 3) + 4);
    }
    uint8_t low[kQ3_KBlock];
    for (int i = 0; i < kQ3_KBlock; ++i) {
      if (L[i] > 3) blk.hmask[i % 32] = static_cast<uint8_t>(blk.hmask[i % 32] | (1 << (i / 32)));
      low[i] = static_cast<uint8_t>(L[i] & 3);
    }
    pack_two_bits(low, blk.qs);
  }
}

void dequantize_row_q3_k(const BlockQ3_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ3_KBlock == 0, "q3_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ3_KBlock; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    float* yb = y + b * kQ3_KBlock;
    for (int j = 0; j < kSubs; ++j) {
      const float dl = d * to_f(q3_scale(x[b].scales, j));
      for (int l = 0; l < kSub; ++l) {
        const int i = kSub * j + l;
        // A clear high bit means the level is 4 lower (the bit stores "not negative").
        const int high = (x[b].hmask[i % 32] >> (i / 32)) & 1;
        yb[i] = dl * to_f(two_bits(x[b].qs, i) - (high ? 0 : 4));
      }
    }
  }
}

}  // namespace gl
