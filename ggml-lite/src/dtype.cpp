// dtype.cpp - dtype table and scalar/row conversions (bit-exact with ggml).
#include "ggml-lite/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "ggml-lite/quants/iq4_nl.h"
#include "ggml-lite/quants/iq4_xs.h"
#include "ggml-lite/quants/mxfp4.h"
#include "ggml-lite/quants/q2_k.h"
#include "ggml-lite/quants/q3_k.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q4_1.h"
#include "ggml-lite/quants/q4_k.h"
#include "ggml-lite/quants/q5_0.h"
#include "ggml-lite/quants/q5_1.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"
#include "ggml-lite/status.h"

namespace gl {
namespace {

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

// Reference row functions of the plain types (the quantized ones live in src/quants/).
void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const fp16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<fp16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const bf16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<bf16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
}
void i32_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const int32_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
}
void i32_from_float(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<int32_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int32_t>(src[i]);
}

// Adapts a typed block function (`dequantize_row_x(const BlockX*, float*, n)`) to the table's
// untyped signature, so each quant header keeps its typed API.
template <class Block, void (*F)(const Block*, float*, int64_t)>
void untyped_to_float(const void* src, float* dst, int64_t n) {
  F(static_cast<const Block*>(src), dst, n);
}
template <class Block, void (*F)(const float*, Block*, int64_t)>
void untyped_from_float(const float* src, void* dst, int64_t n) {
  F(src, static_cast<Block*>(dst), n);
}

template <class Block, void (*D)(const Block*, float*, int64_t), void (*Q)(const float*, Block*, int64_t)>
constexpr DTypeTraits quant_row(std::string_view name, int64_t block_size, uint32_t ggml_type, DType vec_dot_type) {
  return {name,
          block_size,
          sizeof(Block),
          ggml_type,
          false,
          true,
          &untyped_to_float<Block, D>,
          &untyped_from_float<Block, Q>,
          vec_dot_type};
}

// The row of each DType. No default: a DType added to the enum does not compile until it has a
// row here (-Werror=switch).
constexpr DTypeTraits traits_of(DType t) {
  switch (t) {
    case DType::F32: return {"f32", 1, 4, 0, true, false, &f32_to_float, &f32_from_float, DType::F32};
    case DType::F16: return {"f16", 1, 2, 1, true, false, &f16_to_float, &f16_from_float, DType::F32};
    case DType::BF16: return {"bf16", 1, 2, 30, true, false, &bf16_to_float, &bf16_from_float, DType::F32};
    case DType::I32: return {"i32", 1, 4, 26, false, false, &i32_to_float, &i32_from_float, DType::F32};
    case DType::Q8_0:
      return quant_row<BlockQ8_0, dequantize_row_q8_0, quantize_row_q8_0>("q8_0", kQ8_0Block, 8, DType::F32);
    case DType::Q4_0:
      return quant_row<BlockQ4_0, dequantize_row_q4_0, quantize_row_q4_0>("q4_0", kQ4_0Block, kQ4_0GgmlType,
                                                                          DType::F32);
    case DType::Q4_1:
      return quant_row<BlockQ4_1, dequantize_row_q4_1, quantize_row_q4_1>("q4_1", kQ4_1Block, kQ4_1GgmlType,
                                                                          DType::F32);
    case DType::Q5_0:
      return quant_row<BlockQ5_0, dequantize_row_q5_0, quantize_row_q5_0>("q5_0", kQ5_0Block, kQ5_0GgmlType,
                                                                          DType::F32);
    case DType::Q5_1:
      return quant_row<BlockQ5_1, dequantize_row_q5_1, quantize_row_q5_1>("q5_1", kQ5_1Block, kQ5_1GgmlType,
                                                                          DType::F32);
    case DType::Q2_K:
      return quant_row<BlockQ2_K, dequantize_row_q2_k, quantize_row_q2_k>("q2_K", kQ2_KBlock, kQ2_KGgmlType,
                                                                          DType::F32);
    case DType::Q3_K:
      return quant_row<BlockQ3_K, dequantize_row_q3_k, quantize_row_q3_k>("q3_K", kQ3_KBlock, kQ3_KGgmlType,
                                                                          DType::F32);
    case DType::Q4_K:
      return quant_row<BlockQ4_K, dequantize_row_q4_k, quantize_row_q4_k>("q4_K", kQ4_KBlock, kQ4_KGgmlType,
                                                                          DType::F32);
    case DType::Q5_K:
      return quant_row<BlockQ5_K, dequantize_row_q5_k, quantize_row_q5_k>("q5_K", kQ5_KBlock, kQ5_KGgmlType,
                                                                          DType::F32);
    case DType::Q6_K:
      return quant_row<BlockQ6_K, dequantize_row_q6_k, quantize_row_q6_k>("q6_K", kQ6_KBlock, kQ6_KGgmlType,
                                                                          DType::F32);
    case DType::IQ4_NL:
      return quant_row<BlockIQ4_NL, dequantize_row_iq4_nl, quantize_row_iq4_nl>("iq4_nl", kIQ4_NLBlock, kIQ4_NLGgmlType,
                                                                                DType::F32);
    case DType::IQ4_XS:
      return quant_row<BlockIQ4_XS, dequantize_row_iq4_xs, quantize_row_iq4_xs>("iq4_xs", kIQ4_XSBlock, kIQ4_XSGgmlType,
                                                                                DType::F32);
    case DType::MXFP4:
      return quant_row<BlockMXFP4, dequantize_row_mxfp4, quantize_row_mxfp4>("mxfp4", kMXFP4Block, kMXFP4GgmlType,
                                                                             DType::F32);
  }
  return {};
}

constexpr std::array<DTypeTraits, kDTypeCount> make_table() {
  std::array<DTypeTraits, kDTypeCount> t{};
  for (int i = 0; i < kDTypeCount; ++i) t[static_cast<size_t>(i)] = traits_of(static_cast<DType>(i));
  return t;
}

constexpr std::array<DTypeTraits, kDTypeCount> kTraits = make_table();

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
  // Names are ggml's spelling ("q4_K"); the lookup ignores case on both sides.
  auto lower = [](std::string_view s) {
    std::string l(s);
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    return l;
  };
  const std::string want = lower(name);
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (lower(kTraits[i].name) == want) return static_cast<DType>(i);
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

void to_float(DType t, const void* src, float* dst, int64_t n) { dtype_traits(t).to_float(src, dst, n); }

void from_float(DType t, const float* src, void* dst, int64_t n) { dtype_traits(t).from_float(src, dst, n); }

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
  constexpr int64_t kChunk = 256;  // a multiple of every block size (K-quant super-blocks are 256)
  GL_ASSERT(kChunk % dtype_traits(src_type).block_size == 0 && kChunk % dtype_traits(dst_type).block_size == 0,
            "convert_row: a block does not divide the conversion chunk");
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
