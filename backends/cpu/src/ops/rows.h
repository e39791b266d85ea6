// rows.h - strided row access shared by the CPU kernels.
//
//   std::vector<float> buf(t.ne[0]);
//   load_row(t, i1, i2, i3, buf.data());     // any dtype, any nb[0]
//   store_row(dst, i1, i2, i3, buf.data());
#pragma once

#include <cstdint>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Reads row (i1, i2, i3) of t as ne[0] floats.
void load_row(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, float* out);
// Writes ne[0] floats to row (i1, i2, i3) of t, converting to t.type.
void store_row(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, const float* in);
// Row index r (0 .. nrows-1) to (i1, i2, i3).
inline void unravel_row(const Tensor& t, int64_t r, int64_t& i1, int64_t& i2, int64_t& i3) {
  i1 = r % t.ne[1];
  i2 = (r / t.ne[1]) % t.ne[2];
  i3 = r / (t.ne[1] * t.ne[2]);
}
// True when row elements are adjacent (nb[0] == element size) and t is F32.
inline bool is_f32_rows(const Tensor& t) { return t.type == DType::F32 && t.nb[0] == sizeof(float); }
// True when row elements (blocks, for a quantized type) are adjacent, whatever the type.
inline bool has_dense_rows(const Tensor& t) { return t.nb[0] == dtype_traits(t.type).block_bytes; }

}  // namespace gl::cpu
