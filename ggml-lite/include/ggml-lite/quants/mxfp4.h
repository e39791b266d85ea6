// quants/mxfp4.h - the MXFP4 block (OCP microscaling): 32 FP4 (E2M1) values sharing one E8M0
// power-of-two scale (ggml's block_mxfp4).
//
//   std::vector<gl::BlockMXFP4> q(n / gl::kMXFP4Block);
//   gl::quantize_row_mxfp4(x, q.data(), n);
//   gl::dequantize_row_mxfp4(q.data(), y, n);  // y = 2^(e - 128) * kMXFP4Values[q]
//
// The table holds twice the E2M1 values so that it is integral; the scale is halved to match.
// Fixed-width fields and <cstdint> only: CUDA device code includes it and GLSL mirrors it.
// Functions: ggml-lite/src/quants/nonlinear_quants.cpp.
#pragma once

#include <cstdint>

namespace gl {

inline constexpr int kMXFP4Block = 32;
inline constexpr uint32_t kMXFP4GgmlType = 39;

// 2 x E2M1: index bit 3 is the sign.
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

struct BlockMXFP4 {
  uint8_t e;                    // E8M0 exponent: scale 2^(e - 127)
  uint8_t qs[kMXFP4Block / 2];  // element j: low nibble of qs[j]; element j + 16: high nibble
};
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 block must match ggml");

// n must be a multiple of kMXFP4Block.
void quantize_row_mxfp4(const float* x, BlockMXFP4* y, int64_t n);
void dequantize_row_mxfp4(const BlockMXFP4* x, float* y, int64_t n);

}  // namespace gl
