// nonlinear_quants.cpp - reference quantizers and dequantizers of IQ4_NL, IQ4_XS and MXFP4.
//
// IQ4_NL and IQ4_XS index a fixed table of 16 non-uniform levels; the quantizers follow
// llama.cpp's (as llama-quantize runs them, without an importance matrix): per 32 elements, a
// scale search over 15 candidates weighted by x^2, then for IQ4_XS a 6-bit quantization of the
// sub-block scales against one fp16 factor. MXFP4 takes the power-of-two scale that puts the
// largest magnitude in the top E2M1 binade and picks the nearest level per element.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/iq4_nl.h"
#include "ggml-lite/quants/iq4_xs.h"
#include "ggml-lite/quants/mxfp4.h"
#include "ggml-lite/status.h"
#include "quant_search.h"

namespace gl {

using quant::clamp_int;
using quant::nearest_level;
using quant::round_even;
using quant::to_f;

namespace {

constexpr int kSub = 32;
constexpr int kSearchSteps = 7;  // candidate inverse scales (values[0] + t) / max, t in [-7, 7]

// Best scale d for x ~= d * kIQ4_NLValues[L] over one sub-block of 32, weighted by x^2.
float iq4_fit_scale(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kSub; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < quant::kGroupEps) return 0.0f;
  const float v0 = to_f(kIQ4_NLValues[0]);
  auto sums = [&](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0.0f;
    for (int j = 0; j < kSub; ++j) {
      const float q = to_f(kIQ4_NLValues[nearest_level(kIQ4_NLValues, id * x[j])]);
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  float sumqx, sumq2;
  sums(1.0f / (-max / v0), sumqx, sumq2);
  float d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int t = -kSearchSteps; t <= kSearchSteps; ++t) {
    sums((to_f(t) + v0) / max, sumqx, sumq2);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Nibble-packs 32 table indices of x * inv_d into qs (element j low, j + 16 high).
void iq4_pack(const float* x, float inv_d, uint8_t* qs) {
  uint8_t L[kSub];
  for (int j = 0; j < kSub; ++j) L[j] = static_cast<uint8_t>(nearest_level(kIQ4_NLValues, inv_d * x[j]));
  for (int j = 0; j < kSub / 2; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + kSub / 2] << 4));
}

// 2^(e - 128), i.e. half the E8M0 scale, built from bits (e < 2 gives a subnormal).
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000u} << e : uint32_t{e - 1u} << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n) {
  GL_ASSERT(n % kIQ4_NLBlock == 0, "iq4_nl row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kIQ4_NLBlock; ++b) {
    const float* xb = x + b * kIQ4_NLBlock;
    const float d = iq4_fit_scale(xb);
    y[b].d = fp32_to_fp16(d);
    iq4_pack(xb, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
  }
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n) {
  GL_ASSERT(n % kIQ4_NLBlock == 0, "iq4_nl row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kIQ4_NLBlock; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    float* yb = y + b * kIQ4_NLBlock;
    for (int j = 0; j < kIQ4_NLBlock / 2; ++j) {
      yb[j] = d * to_f(kIQ4_NLValues[x[b].qs[j] & 0xF]);
      yb[j + kIQ4_NLBlock / 2] = d * to_f(kIQ4_NLValues[x[b].qs[j] >> 4]);
    }
  }
}

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n) {
  GL_ASSERT(n % kIQ4_XSBlock == 0, "iq4_xs row length must be a multiple of 256");
  constexpr int kSubs = kIQ4_XSBlock / kSub;
  for (int64_t b = 0; b < n / kIQ4_XSBlock; ++b) {
    const float* xb = x + b * kIQ4_XSBlock;
    float scales[kSubs];
    float max_scale = 0.0f, amax = 0.0f;
    for (int s = 0; s < kSubs; ++s) {
      scales[s] = iq4_fit_scale(xb + kSub * s);
      if (std::fabs(scales[s]) > amax) {
        amax = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    BlockIQ4_XS& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    // The largest scale maps to -32, so its sign goes into d.
    const float d = -max_scale / 32.0f;
    blk.d = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int s = 0; s < kSubs; ++s) {
      const int l = clamp_int(round_even(id * scales[s]), -32, 31);
      // llama.cpp picks the levels against the unrounded d; so do we, for the same files.
      const float dl = d * to_f(l);
      iq4_pack(xb + kSub * s, dl != 0.0f ? 1.0f / dl : 0.0f, blk.qs + 16 * s);
      const int ls = l + 32;
      blk.scales_l[s / 2] = static_cast<uint8_t>(blk.scales_l[s / 2] | ((ls & 0xF) << (4 * (s % 2))));
      blk.scales_h = static_cast<uint16_t>(blk.scales_h | ((ls >> 4) << (2 * s)));
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n) {
  GL_ASSERT(n % kIQ4_XSBlock == 0, "iq4_xs row length must be a multiple of 256");
  for (int64_t b = 0; b < n / kIQ4_XSBlock; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int s = 0; s < kIQ4_XSBlock / kSub; ++s) {
      const int ls = ((x[b].scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((x[b].scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * to_f(ls - 32);
      const uint8_t* qs = x[b].qs + 16 * s;
      float* ys = y + b * kIQ4_XSBlock + kSub * s;
      for (int j = 0; j < 16; ++j) {
        ys[j] = dl * to_f(kIQ4_NLValues[qs[j] & 0xF]);
        ys[j + 16] = dl * to_f(kIQ4_NLValues[qs[j] >> 4]);
      }
    }
  }
}

void quantize_row_mxfp4(const float* x, BlockMXFP4* y, int64_t n) {
  GL_ASSERT(n % kMXFP4Block == 0, "mxfp4 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kMXFP4Block; ++b) {
    const float* xb = x + b * kMXFP4Block;
    float amax = 0.0f;
    for (int j = 0; j < kMXFP4Block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    // The top level (6 = 12 / 2) times 2^(floor(log2 amax) - 2) covers amax; clamped to E8M0's range.
    const float e = amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
    y[b].e = static_cast<uint8_t>(std::clamp(e, 0.0f, 254.0f));
    const float d = e8m0_half(y[b].e);
    uint8_t L[kMXFP4Block];
    for (int j = 0; j < kMXFP4Block; ++j) {
      // The first level of least error, as ggml (so +0 wins over -0).
      int best = 0;
      float best_err = std::fabs(to_f(kMXFP4Values[0]) * d - xb[j]);
      for (int k = 1; k < 16; ++k) {
        const float err = std::fabs(to_f(kMXFP4Values[k]) * d - xb[j]);
        if (err < best_err) {
          best = k;
          best_err = err;
        }
      }
      L[j] = static_cast<uint8_t>(best);
    }
    for (int j = 0; j < kMXFP4Block / 2; ++j) y[b].qs[j] = static_cast<uint8_t>(L[j] | (L[j + kMXFP4Block / 2] << 4));
  }
}

void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n) {
  GL_ASSERT(n % kMXFP4Block == 0, "mxfp4 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kMXFP4Block; ++b) {
    const float d = e8m0_half(x[b].e);
    float* yb = y + b * kMXFP4Block;
    for (int j = 0; j < kMXFP4Block / 2; ++j) {
      yb[j] = to_f(kMXFP4Values[x[b].qs[j] & 0xF]) * d;
      yb[j + kMXFP4Block / 2] = to_f(kMXFP4Values[x[b].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace gl
