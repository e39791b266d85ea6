// quants/q8_0.h - the Q8_0 block: 32 int8 quants sharing one fp16 scale (ggml's block_q8_0).
//
//   std::vector<gl::BlockQ8_0> q(n / gl::kQ8_0Block);
//   gl::quantize_row_q8_0(x, q.data(), n);    // d = max|x| / 127, q = round(x / d)
//   gl::dequantize_row_q8_0(q.data(), y, n);  // y = d * q
//
// Why this header is so bare: nvcc device code includes it (backends/cuda/src/ops/quants/q8_0.cuh)
// and a GLSL shader mirrors the struct field for field, so it holds fixed-width fields only and
// needs nothing beyond <cstdint>. The byte layout is ggml's, so GGUF files are shared with
// llama.cpp. The reference functions live in ggml-lite/src/quants/q8_0.cpp; the dtype table
// (dtype.h) points at them.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kQ8_0Block = 32;  // elements per block

struct BlockQ8_0 {
  uint16_t d;             // scale, IEEE binary16 bits
  int8_t qs[kQ8_0Block];  // quants: element i is d * qs[i]
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must match ggml");

inline constexpr int kQ8_0BlockBytes = static_cast<int>(sizeof(BlockQ8_0));

// n must be a multiple of kQ8_0Block. Round-half-away-from-zero, as ggml's reference quantizer.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);

}  // namespace gl
