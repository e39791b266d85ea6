// tensor.cpp - shape and stride helpers.
#include "ggml-lite/tensor.h"

#include <fmt/format.h>

namespace gl {

int64_t nelements(const Tensor& t) { return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]; }
int64_t nrows(const Tensor& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

size_t nbytes(const Tensor& t) {
  for (int64_t n : t.ne)
    if (n <= 0) return 0;
  const int64_t blck = dtype_traits(t.type).block_size;
  size_t last = static_cast<size_t>(t.ne[0] / blck - 1) * t.nb[0];
  for (int d = 1; d < kMaxDims; ++d) last += static_cast<size_t>(t.ne[d] - 1) * t.nb[d];
  return last + dtype_traits(t.type).block_bytes;
}

int n_dims(const Tensor& t) {
  for (int d = kMaxDims - 1; d >= 1; --d)
    if (t.ne[d] > 1) return d + 1;
  return 1;
}

bool is_contiguous(const Tensor& t) {
  const DTypeTraits& tr = dtype_traits(t.type);
  size_t expect = tr.block_bytes;
  if (t.nb[0] != expect && t.ne[0] > tr.block_size) return false;
  expect = row_bytes(t.type, t.ne[0]);
  for (int d = 1; d < kMaxDims; ++d) {
    if (t.ne[d] != 1 && t.nb[d] != expect) return false;
    expect *= static_cast<size_t>(t.ne[d]);
  }
  return true;
}

bool is_transposed(const Tensor& t) { return t.nb[0] > t.nb[1]; }

bool same_shape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

bool can_broadcast(const Tensor& b, const Tensor& a) {
  for (int d = 0; d < kMaxDims; ++d)
    if (b.ne[d] <= 0 || a.ne[d] % b.ne[d] != 0) return false;
  return true;
}

void set_contiguous_strides(Tensor& t) {
  const DTypeTraits& tr = dtype_traits(t.type);
  t.nb[0] = tr.block_bytes;
  t.nb[1] = t.nb[0] * static_cast<size_t>(t.ne[0] / tr.block_size);
  for (int d = 2; d < kMaxDims; ++d) t.nb[d] = t.nb[d - 1] * static_cast<size_t>(t.ne[d - 1]);
}

std::string shape_str(const Tensor& t) {
  const int n = n_dims(t);
  std::string s = "[";
  for (int d = 0; d < n; ++d) s += fmt::format("{}{}", d ? ", " : "", t.ne[d]);
  return s + "]";
}

}  // namespace gl
