// k_quants.cpp - reference quantizers and dequantizers of Q4_K, Q5_K, Q6_K and Q8_K.
//
// Dequantizers evaluate in the same order as ggml's reference and gguf-py's numpy code
// ((d * sc) * q - dmin * m in f32), so they are bit-exact with them. Quantizers follow
// llama.cpp's reference choices: a weighted affine search per sub-block, then the sub-block
// scales and mins quantized to 6 bits against the largest of each, then the quants redone
// against the stored (rounded) scales.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q4_k.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"
#include "ggml-lite/quants/q8_k.h"
#include "ggml-lite/status.h"
#include "quant_search.h"

namespace gl {

using quant::clamp_int;
using quant::round_even;
using quant::to_f;

namespace {

constexpr int kSub = 32;  // Q4_K / Q5_K sub-block
constexpr int kSubs = kQ4_KBlock / kSub;

// The header of a Q4_K / Q5_K super-block: d, dmin and the packed 6-bit scales and mins.
struct KHeader {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
};

// Redoes the levels (0..nmax) of x against the stored (rounded) scales and mins of h.
void k4_requantize(const float* x, int nmax, const KHeader& h, uint8_t* L) {
  for (int j = 0; j < kSubs; ++j) {
    int ls, lm;
    quant::unpack_scale_min_k4(j, h.scales, ls, lm);
    const float d = fp16_to_fp32(h.d) * to_f(ls);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(h.dmin) * to_f(lm);
    for (int l = 0; l < kSub; ++l) {
      L[kSub * j + l] = static_cast<uint8_t>(clamp_int(round_even((x[kSub * j + l] + dm) / d), 0, nmax));
    }
  }
}

// Without importance weights: fits every sub-block of x (256 values), then quantizes the scales
// and mins to 6 bits against the largest of each.
KHeader k4_header_plain(const float* x, int nmax, quant::AffineSearch search, uint8_t* L) {
  float scales[kSubs], mins[kSubs], w[kSub];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    // Error weights grow with |x| but never vanish: the RMS of the sub-block is added.
    const float av_x = std::sqrt(sum_x2 / to_f(kSub));
    for (int l = 0; l < kSub; ++l) w[l] = av_x + std::fabs(xs[l]);
    scales[j] = quant::fit_affine(kSub, nmax, xs, w, L + kSub * j, mins[j], search);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  KHeader h{};
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    const int ls = std::min(63, round_even(inv_scale * scales[j]));
    const int lm = std::min(63, round_even(inv_min * mins[j]));
    quant::pack_scale_min_k4(j, ls, lm, h.scales);
  }
  h.d = fp32_to_fp16(max_scale / 63.0f);
  h.dmin = fp32_to_fp16(max_min / 63.0f);
  k4_requantize(x, nmax, h, L);
  return h;
}

// With importance weights qw (256 values): weights qw * sqrt(sigma^2 + x^2), a finer affine
// search, and the 6-bit scales and mins fitted by weighted least squares (each sub-block
// weighted by its total weight) instead of taken against the largest.
KHeader k4_header_imatrix(const float* x, const float* qw, int nmax, uint8_t* L) {
  float sum_x2 = 0.0f;
  for (int l = 0; l < kQ4_KBlock; ++l) sum_x2 += x[l] * x[l];
  const float sigma2 = 2.0f * sum_x2 / to_f(kQ4_KBlock);
  float scales[kSubs], mins[kSubs], sw[kSubs], w[kSub];
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + kSub * j;
    for (int l = 0; l < kSub; ++l) w[l] = qw[kSub * j + l] * std::sqrt(sigma2 + xs[l] * xs[l]);
    sw[j] = 0.0f;
    for (int l = 0; l < kSub; ++l) sw[j] += w[l];
    scales[j] = quant::fit_affine(kSub, nmax, xs, w, L + kSub * j, mins[j], {-0.9f, 0.05f, 36, false});
  }
  uint8_t ls[kSubs], lm[kSubs];
  const float d_block = quant::fit_positive(kSubs, 63, scales, ls, sw);
  const float m_block = quant::fit_positive(kSubs, 63, mins, lm, sw);
  KHeader h{};
  for (int j = 0; j < kSubs; ++j)
    quant::pack_scale_min_k4(j, std::min<int>(63, ls[j]), std::min<int>(63, lm[j]), h.scales);
  h.d = fp32_to_fp16(d_block);
  h.dmin = fp32_to_fp16(m_block);
  k4_requantize(x, nmax, h, L);
  return h;
}

KHeader k4_header(const float* x, const float* qw, int nmax, quant::AffineSearch plain_search, uint8_t* L) {
  return qw ? k4_header_imatrix(x, qw, nmax, L) : k4_header_plain(x, nmax, plain_search, L);
}

// Per-sub-block factors of a Q4_K / Q5_K header: y = d[j] * q - m[j].
void k4_factors(uint16_t d16, uint16_t dmin16, const uint8_t* scales, float* d, float* m) {
  const float dall = fp16_to_fp32(d16), mall = fp16_to_fp32(dmin16);
  for (int j = 0; j < kSubs; ++j) {
    int ls, lm;
    quant::unpack_scale_min_k4(j, scales, ls, lm);
    d[j] = dall * to_f(ls);
    m[j] = mall * to_f(lm);
  }
}

}  // namespace

void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n) { quantize_row_q4_k_imatrix(x, y, n, nullptr); }

void quantize_row_q4_k_imatrix(const float* x, BlockQ4_K* y, int64_t n, const float* qw) {
  GL_ASSERT(n % kQ4_KBlock == 0, "q4_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ4_KBlock; ++b) {
    const float* xb = x + b * kQ4_KBlock;
    uint8_t L[kQ4_KBlock];
    const KHeader h = k4_header(xb, qw ? qw + b * kQ4_KBlock : nullptr, 15, {-1.0f, 0.1f, 20, false}, L);
    y[b].d = h.d;
    y[b].dmin = h.dmin;
    std::memcpy(y[b].scales, h.scales, kKScaleBytes);
    for (int c = 0; c < kQ4_KBlock / 64; ++c)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ4_KBlock == 0, "q4_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ4_KBlock; ++b) {
    float d[kSubs], m[kSubs];
    k4_factors(x[b].d, x[b].dmin, x[b].scales, d, m);
    float* yb = y + b * kQ4_KBlock;
    for (int c = 0; c < kQ4_KBlock / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = x[b].qs[32 * c + l];
        yb[64 * c + l] = d[2 * c] * to_f(q & 0xF) - m[2 * c];
        yb[64 * c + 32 + l] = d[2 * c + 1] * to_f(q >> 4) - m[2 * c + 1];
      }
    }
  }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, int64_t n) { quantize_row_q5_k_imatrix(x, y, n, nullptr); }

void quantize_row_q5_k_imatrix(const float* x, BlockQ5_K* y, int64_t n, const float* qw) {
  GL_ASSERT(n % kQ5_KBlock == 0, "q5_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ5_KBlock; ++b) {
    const float* xb = x + b * kQ5_KBlock;
    uint8_t L[kQ5_KBlock];
    const KHeader h = k4_header(xb, qw ? qw + b * kQ5_KBlock : nullptr, 31, {-0.5f, 0.1f, 15, false}, L);
    y[b].d = h.d;
    y[b].dmin = h.dmin;
    std::memcpy(y[b].scales, h.scales, kKScaleBytes);
    std::memset(y[b].qh, 0, sizeof(y[b].qh));
    for (int c = 0; c < kQ5_KBlock / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y[b].qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        y[b].qh[l] = static_cast<uint8_t>(y[b].qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ5_KBlock == 0, "q5_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ5_KBlock; ++b) {
    float d[kSubs], m[kSubs];
    k4_factors(x[b].d, x[b].dmin, x[b].scales, d, m);
    float* yb = y + b * kQ5_KBlock;
    for (int c = 0; c < kQ5_KBlock / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = x[b].qs[32 * c + l];
        const int h = x[b].qh[l] >> (2 * c);
        yb[64 * c + l] = d[2 * c] * to_f((q & 0xF) | ((h & 1) << 4)) - m[2 * c];
        yb[64 * c + 32 + l] = d[2 * c + 1] * to_f((q >> 4) | ((h & 2) << 3)) - m[2 * c + 1];
      }
    }
  }
}

namespace {

// Element i of a Q6_K block as its 6-bit level (0..63).
int q6_level(const BlockQ6_K& blk, int i) {
  const int h = i / 128, k = (i % 128) / 32, l = i % 32;
  const uint8_t lo_byte = blk.ql[64 * h + 32 * (k & 1) + l];
  const int lo = k < 2 ? lo_byte & 0xF : lo_byte >> 4;
  const int hi = (blk.qh[32 * h + l] >> (2 * k)) & 3;
  return lo | (hi << 4);
}

void q6_pack(const int8_t* L, BlockQ6_K& blk) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int q0 = L[128 * h + l], q1 = L[128 * h + 32 + l], q2 = L[128 * h + 64 + l], q3 = L[128 * h + 96 + l];
      blk.ql[64 * h + l] = static_cast<uint8_t>((q0 & 0xF) | ((q2 & 0xF) << 4));
      blk.ql[64 * h + 32 + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      blk.qh[32 * h + l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t n) { quantize_row_q6_k_imatrix(x, y, n, nullptr); }

void quantize_row_q6_k_imatrix(const float* x, BlockQ6_K* y, int64_t n, const float* qw) {
  GL_ASSERT(n % kQ6_KBlock == 0, "q6_K row length must be a multiple of 256");
  constexpr int kSub16 = 16, kSubs16 = kQ6_KBlock / kSub16;
  for (int64_t b = 0; b < n / kQ6_KBlock; ++b) {
    const float* xb = x + b * kQ6_KBlock;
    int8_t L[kQ6_KBlock];
    float scales[kSubs16];
    float max_scale = 0.0f, max_abs = 0.0f;
    for (int j = 0; j < kSubs16; ++j) {
      scales[j] = quant::fit_symmetric(kSub16, 32, xb + kSub16 * j, L + kSub16 * j, quant::SymWeight::SQUARE,
                                       qw ? qw + b * kQ6_KBlock + kSub16 * j : nullptr);
      if (std::fabs(scales[j]) > max_abs) {
        max_abs = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(&y[b], 0, sizeof(BlockQ6_K));
    if (max_abs < quant::kGroupEps) continue;  // all zero: d = 0 and zero quants
    // The largest scale maps to -128 so its sign is absorbed by d.
    const float iscale = -128.0f / max_scale;
    y[b].d = fp32_to_fp16(1.0f / iscale);
    for (int j = 0; j < kSubs16; ++j)
      y[b].scales[j] = static_cast<int8_t>(std::min(127, round_even(iscale * scales[j])));
    for (int j = 0; j < kSubs16; ++j) {
      const float d = fp16_to_fp32(y[b].d) * to_f(y[b].scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < kSub16; ++l) {
        const int q = clamp_int(round_even(xb[kSub16 * j + l] / d), -32, 31);
        L[kSub16 * j + l] = static_cast<int8_t>(q + 32);
      }
    }
    q6_pack(L, y[b]);
  }
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ6_KBlock == 0, "q6_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ6_KBlock; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    float* yb = y + b * kQ6_KBlock;
    for (int i = 0; i < kQ6_KBlock; ++i) {
      const float ds = d * to_f(x[b].scales[i / 16]);
      yb[i] = ds * to_f(q6_level(x[b], i) - 32);
    }
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  GL_ASSERT(n % kQ8_KBlock == 0, "q8_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ8_KBlock; ++b) {
    const float* xb = x + b * kQ8_KBlock;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQ8_KBlock; ++i) {
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    }
    std::memset(&y[b], 0, sizeof(BlockQ8_K));
    if (amax == 0.0f) continue;
    // -127 rather than -128: the quants stay symmetric, which SIMD dot products rely on.
    const float iscale = -127.0f / max;
    for (int i = 0; i < kQ8_KBlock; ++i) y[b].qs[i] = static_cast<int8_t>(std::min(127, round_even(iscale * xb[i])));
    for (int j = 0; j < kQ8_KBlock / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

void dequantize_row_q8_k(const BlockQ8_K* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ8_KBlock == 0, "q8_K row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kQ8_KBlock; ++b)
    for (int i = 0; i < kQ8_KBlock; ++i) y[b * kQ8_KBlock + i] = x[b].d * to_f(x[b].qs[i]);
}

}  // namespace gl
