// legacy_quants.cpp - reference quantizers and dequantizers of Q4_0, Q4_1, Q5_0 and Q5_1.
//
// Blocks of 32; element j sits in the low nibble of qs[j] and element j + 16 in the high one.
// Quantizers are ggml's reference ones (one scale from the extreme values, truncation after
// adding 0.5); dequantizers evaluate d * q (+ m) in f32 exactly as ggml and gguf-py do.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ggml-lite/dtype.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q4_1.h"
#include "ggml-lite/quants/q5_0.h"
#include "ggml-lite/quants/q5_1.h"
#include "ggml-lite/status.h"
#include "quant_search.h"

namespace gl {

using quant::to_f;

namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;

// Symmetric blocks (Q4_0, Q5_0): d = max / -(levels / 2), where max is the value of largest
// magnitude; that value maps to level 0. Writes levels in [0, levels) to q.
float quantize_symmetric(const float* x, int levels, uint8_t* q) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -to_f(levels / 2);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float offset = to_f(levels / 2) + 0.5f;
  // Truncation of a value >= 0 after adding 0.5: round half up, as the reference.
  for (int j = 0; j < kBlock; ++j)
    q[j] = static_cast<uint8_t>(std::min(levels - 1, static_cast<int>(x[j] * id + offset)));
  return d;
}

// Affine blocks (Q4_1, Q5_1): d = (max - min) / (levels - 1), m = min.
float quantize_affine(const float* x, int levels, uint8_t* q, float& min) {
  min = x[0];
  float max = x[0];
  for (int j = 1; j < kBlock; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / to_f(levels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kBlock; ++j)
    q[j] = static_cast<uint8_t>(std::min(levels - 1, static_cast<int>((x[j] - min) * id + 0.5f)));
  return d;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kHalf] & 0xF) << 4));
}

int nibble(const uint8_t* qs, int j) { return j < kHalf ? qs[j] & 0xF : qs[j - kHalf] >> 4; }

void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kBlock; ++j) bits |= uint32_t{(q[j] >> 4) & 1u} << j;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(bits >> (8 * k));
}

int high_bit(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  GL_ASSERT(n % kQ4_0Block == 0, "q4_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ4_0Block; ++b) {
    uint8_t q[kBlock];
    y[b].d = fp32_to_fp16(quantize_symmetric(x + b * kBlock, 16, q));
    pack_nibbles(q, y[b].qs);
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ4_0Block == 0, "q4_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ4_0Block; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int j = 0; j < kBlock; ++j) y[b * kBlock + j] = d * to_f(nibble(x[b].qs, j) - 8);
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  GL_ASSERT(n % kQ4_1Block == 0, "q4_1 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ4_1Block; ++b) {
    uint8_t q[kBlock];
    float min;
    y[b].d = fp32_to_fp16(quantize_affine(x + b * kBlock, 16, q, min));
    y[b].m = fp32_to_fp16(min);
    pack_nibbles(q, y[b].qs);
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ4_1Block == 0, "q4_1 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ4_1Block; ++b) {
    const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
    for (int j = 0; j < kBlock; ++j) y[b * kBlock + j] = d * to_f(nibble(x[b].qs, j)) + m;
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  GL_ASSERT(n % kQ5_0Block == 0, "q5_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ5_0Block; ++b) {
    uint8_t q[kBlock];
    y[b].d = fp32_to_fp16(quantize_symmetric(x + b * kBlock, 32, q));
    pack_nibbles(q, y[b].qs);
    pack_high_bits(q, y[b].qh);
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ5_0Block == 0, "q5_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ5_0Block; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int j = 0; j < kBlock; ++j) {
      const int q = nibble(x[b].qs, j) | (high_bit(x[b].qh, j) << 4);
      y[b * kBlock + j] = d * to_f(q - 16);
    }
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  GL_ASSERT(n % kQ5_1Block == 0, "q5_1 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ5_1Block; ++b) {
    uint8_t q[kBlock];
    float min;
    y[b].d = fp32_to_fp16(quantize_affine(x + b * kBlock, 32, q, min));
    y[b].m = fp32_to_fp16(min);
    pack_nibbles(q, y[b].qs);
    pack_high_bits(q, y[b].qh);
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ5_1Block == 0, "q5_1 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ5_1Block; ++b) {
    const float d = fp16_to_fp32(x[b].d), m = fp16_to_fp32(x[b].m);
    for (int j = 0; j < kBlock; ++j) {
      const int q = nibble(x[b].qs, j) | (high_bit(x[b].qh, j) << 4);
      y[b * kBlock + j] = d * to_f(q) + m;
    }
  }
}

}  // namespace gl
