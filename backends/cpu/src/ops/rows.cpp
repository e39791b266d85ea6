// rows.cpp - strided row load/store with dtype conversion.
#include "rows.h"

#include <cstring>
#include <vector>

namespace gl::cpu {

void load_row(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, float* out) {
  const char* row = elem_ptr(t, 0, i1, i2, i3);
  const size_t esz = dtype_traits(t.type).block_bytes;
  if (dtype_traits(t.type).is_quant || t.nb[0] == esz) {
    to_float(t.type, row, out, t.ne[0]);
    return;
  }
  for (int64_t i = 0; i < t.ne[0]; ++i) to_float(t.type, row + i * t.nb[0], out + i, 1);
}

void store_row(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, const float* in) {
  char* row = elem_ptr(t, 0, i1, i2, i3);
  const size_t esz = dtype_traits(t.type).block_bytes;
  if (dtype_traits(t.type).is_quant || t.nb[0] == esz) {
    from_float(t.type, in, row, t.ne[0]);
    return;
  }
  for (int64_t i = 0; i < t.ne[0]; ++i) from_float(t.type, in + i, row + i * t.nb[0], 1);
}

}  // namespace gl::cpu
