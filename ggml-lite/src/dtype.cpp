// dtype.cpp - dtype table and scalar/row conversions (bit-exact with ggml).
#include "ggml-lite/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "ggml-lite/status.h"

namespace gl {
namespace {

constexpr std::array<DTypeTraits, kDTypeCount> kTraits{{
    {"f32", 1, 4, 0, true, false},
    {"f16", 1, 2, 1, true, false},
    {"bf16", 1, 2, 30, true, false},
    {"i32", 1, 4, 26, false, false},
    {"q8_0", kQ8_0Block, sizeof(BlockQ8_0), 8, false, true},
}};

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

const DTypeTraits& dtype_traits(DType t) { return kTraits[static_cast<size_t>(t)]; }

size_t row_bytes(DType t, int64_t n) {
  const DTypeTraits& tr = dtype_traits(t);
  GL_ASSERT(n % tr.block_size == 0, "row length is not a multiple of the block size");
  return static_cast<size_t>(n / tr.block_size) * tr.block_bytes;
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].ggml_type == ggml_type) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].name == lower) return static_cast<DType>(i);
  return std::nullopt;
}

// IEEE binary16 from binary32 with round-to-nearest-even, via bit arithmetic.
fp16_t fp32_to_fp16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN (keep NaN quiet and non-zero)
    return static_cast<fp16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<fp16_t>(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (absx < 0x38800000u) {                                             // result is subnormal or zero
    if (absx < 0x33000000u) return static_cast<fp16_t>(sign);           // < half of the smallest subnormal
    const uint32_t e = absx >> 23;
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<fp16_t>(sign | h);
  }
  uint32_t h = ((absx - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<fp16_t>(sign | h);
}

float fp16_to_fp32(fp16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

bf16_t fp32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<bf16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  GL_ASSERT(n % kQ8_0Block == 0, "q8_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float* xb = x + b * kQ8_0Block;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0Block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int i = 0; i < kQ8_0Block; ++i) y[b].qs[i] = static_cast<int8_t>(std::lround(xb[i] * id));
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  GL_ASSERT(n % kQ8_0Block == 0, "q8_0 row length must be a multiple of 32");
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int i = 0; i < kQ8_0Block; ++i) y[b * kQ8_0Block + i] = d * static_cast<float>(x[b].qs[i]);
  }
}

void to_float(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16: {
      const auto* s = static_cast<const fp16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
      return;
    }
    case DType::BF16: {
      const auto* s = static_cast<const bf16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
      return;
    }
    case DType::I32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::Q8_0: dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); return;
  }
}

void from_float(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16: {
      auto* d = static_cast<fp16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* d = static_cast<bf16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
      return;
    }
    case DType::I32: {
      auto* d = static_cast<int32_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int32_t>(src[i]);
      return;
    }
    case DType::Q8_0: quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n); return;
  }
}

void convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n) {
  if (src_type == dst_type) {
    std::memcpy(dst, src, row_bytes(src_type, n));
    return;
  }
  if (src_type == DType::I32 && dst_type == DType::I32) return;
  if (src_type == DType::F32) {
    from_float(dst_type, static_cast<const float*>(src), dst, n);
    return;
  }
  if (dst_type == DType::F32) {
    to_float(src_type, src, static_cast<float*>(dst), n);
    return;
  }
  constexpr int64_t kChunk = 256;  // multiple of the Q8_0 block
  float tmp[kChunk];
  const size_t src_step = row_bytes(src_type, kChunk);
  const size_t dst_step = row_bytes(dst_type, kChunk);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    const int64_t k = i / kChunk;
    to_float(src_type, static_cast<const char*>(src) + k * src_step, tmp, m);
    from_float(dst_type, tmp, static_cast<char*>(dst) + k * dst_step, m);
  }
}

}  // namespace gl
