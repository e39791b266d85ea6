// dtype.h - element types: the dtype table (sizes and reference behaviour) and row conversion.
//
//   float f = gl::fp16_to_fp32(gl::fp32_to_fp16(1.5f));
//   const gl::DTypeTraits& tr = gl::dtype_traits(gl::DType::Q8_0);
//   std::vector<char> q(gl::row_bytes(gl::DType::Q8_0, n));
//   tr.from_float(src, q.data(), n);  // the reference quantizer
//   gl::convert_row(gl::DType::Q8_0, q.data(), gl::DType::F32, dst, n);
//
// Layouts match ggml byte for byte (GGUF files are shared with llama.cpp):
// F16 is IEEE half, BF16 is the upper 16 bits of an F32, and each quantized
// type's block is declared in its own header under ggml-lite/quants/.
//
// The table is the one place generic code learns what a type is and does:
// conversion, the GGUF loader's checks and the tools go through it, never
// through `case DType::Q8_0`. Backends keep their own kernel tables keyed by
// DType (backends/*/src/ops/...) and refuse a type they have no kernel for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ggml-lite/quants/q8_0.h"

namespace gl {

// The llama.cpp quant family after Q8_0 (block layouts in ggml-lite/quants/<type>.h); a backend
// without kernels for one refuses it and the scheduler places the node on the CPU.
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  I32,
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
};
inline constexpr int kDTypeCount = 17;

// Reference row conversions of a table row: n elements, n a multiple of block_size. Values, not
// bits, for I32 (static_cast both ways).
using RowToFloatFn = void (*)(const void* src, float* dst, int64_t n);
using RowFromFloatFn = void (*)(const float* src, void* dst, int64_t n);

struct DTypeTraits {
  std::string_view name;
  int64_t block_size;         // elements per block (1 for plain types)
  size_t block_bytes;         // bytes per block
  uint32_t ggml_type;         // ggml / GGUF type id
  bool is_float;              // F32, F16, BF16 (usable as activations)
  bool is_quant;              // block-quantized
  RowToFloatFn to_float;      // reference dequantizer (row -> float)
  RowFromFloatFn from_float;  // reference quantizer (float row -> blocks)
  // The activation type a CPU dot product against weights of this type reads: F32 for every
  // type today; a K-quant declares a quantized one (activations are quantized once per row).
  DType vec_dot_type;
};

const DTypeTraits& dtype_traits(DType t);
inline std::string_view dtype_name(DType t) { return dtype_traits(t).name; }
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_bytes(DType t, int64_t n);
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "q4_K", ... (case-insensitive)

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

// Converts n contiguous elements between any two types. Quantized types need n
// to be a multiple of their block size. I32 <-> float converts values (not bits).
void convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n);
// Shortcuts for the common case of reading/writing floats: the table's
// to_float / from_float.
void to_float(DType t, const void* src, float* dst, int64_t n);
void from_float(DType t, const float* src, void* dst, int64_t n);

}  // namespace gl
