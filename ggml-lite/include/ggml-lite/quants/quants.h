// quants/quants.h - one table of the block-quantized types that have reference functions here,
// keyed by ggml type id, for the dtype table and the loader to hook into.
//
//   const gl::QuantRef* q = gl::quant_ref_by_ggml_type(12);  // "q4_K"
//   if (q) q->to_float(tensor_bytes, row, n);                 // n a multiple of q->block_size
//   if (q->from_float_imatrix) q->from_float_imatrix(row, blocks, n, imatrix_column_weights);
//   std::span<const gl::QuantRef> all = gl::quant_refs();
//
// Names are spelled as gguf and llama.cpp do ("q4_K", "iq4_xs", "mxfp4"). The per-type headers
// (quants/q4_k.h, ...) hold the block structs and typed functions; this table type-erases them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace gl {

struct QuantRef {
  std::string_view name;  // ggml's spelling
  uint32_t ggml_type;     // GGUF tensor type id
  int64_t block_size;     // elements per block
  size_t block_bytes;     // bytes per block
  // Row conversions of n elements (n a multiple of block_size); src/dst hold n / block_size blocks.
  void (*to_float)(const void* src, float* dst, int64_t n);
  void (*from_float)(const float* src, void* dst, int64_t n);
  // With importance weights qw (n values, one per element of the row); nullptr where the type
  // has no imatrix variant here (from_float is then what llama-quantize does too).
  void (*from_float_imatrix)(const float* src, void* dst, int64_t n, const float* qw);
};

// Every type with reference functions here, ordered by ggml type id.
std::span<const QuantRef> quant_refs();
// nullptr when the id is not in quant_refs().
const QuantRef* quant_ref_by_ggml_type(uint32_t ggml_type);
// Exact (case-sensitive) ggml spelling; nullptr when unknown.
const QuantRef* quant_ref_by_name(std::string_view name);

}  // namespace gl
