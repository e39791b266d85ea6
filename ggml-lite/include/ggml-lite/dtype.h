// dtype.h - element types, quant blocks and row conversion.
//
//   float f = gl::fp16_to_fp32(gl::fp32_to_fp16(1.5f));
//   std::vector<gl::BlockQ8_0> q(n / 32);
//   gl::quantize_row_q8_0(src, q.data(), n);
//   gl::convert_row(gl::DType::Q8_0, q.data(), gl::DType::F32, dst, n);
//
// Layouts match ggml byte for byte (GGUF files are shared with llama.cpp):
// F16 is IEEE half, BF16 is the upper 16 bits of an F32, and Q8_0 is a block of
// 32 int8 values with one fp16 scale (d = max|x| / 127, x ~= d * q).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gl {

enum class DType : uint8_t { F32, F16, BF16, I32, Q8_0 };
inline constexpr int kDTypeCount = 5;

struct DTypeTraits {
  std::string_view name;
  int64_t block_size;  // elements per block (1 for plain types)
  size_t block_bytes;  // bytes per block
  uint32_t ggml_type;  // ggml / GGUF type id
  bool is_float;       // F32, F16, BF16 (usable as activations)
  bool is_quant;       // block-quantized
};

const DTypeTraits& dtype_traits(DType t);
inline std::string_view dtype_name(DType t) { return dtype_traits(t).name; }
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_bytes(DType t, int64_t n);
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "q8_0", ... (case-insensitive)

using fp16_t = uint16_t;
using bf16_t = uint16_t;

// Round-to-nearest-even conversions; NaN and Inf are preserved.
float fp16_to_fp32(fp16_t h);
fp16_t fp32_to_fp16(float f);
inline float bf16_to_fp32(bf16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
bf16_t fp32_to_bf16(float f);

inline constexpr int kQ8_0Block = 32;
struct BlockQ8_0 {
  fp16_t d;
  int8_t qs[kQ8_0Block];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must match ggml");

// n must be a multiple of 32.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);

// Converts n contiguous elements between any two types. Quantized destinations
// need n % 32 == 0. I32 <-> float converts values (not bits).
void convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n);
// Shortcuts for the common case of reading/writing floats.
void to_float(DType t, const void* src, float* dst, int64_t n);
void from_float(DType t, const float* src, void* dst, int64_t n);

}  // namespace gl
