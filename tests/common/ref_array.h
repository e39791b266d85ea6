// ref_array.h - logical float64 views of tensors, for the reference evaluator.
//
//   std::vector<uint8_t> bytes = ...;                  // the root tensor's memory
//   gl::test::RefArray a = gl::test::decode(*t, bytes);  // t may be a strided view
//   double v = a.at(i0, i1, i2, i3);
//
// Decoding reads every element through t's nb strides and view offset and turns
// it into a double exactly: F16 and BF16 by their bit layout, Q8_0 as d * q with
// the block scale decoded in double, I32 as its integer value. These decoders
// are written here, independent of gl::to_float, so the core tests can use them
// as the oracle for the library's own conversions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"

namespace gl::test {

struct RefArray {
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  std::vector<double> v;  // contiguous, ne[0] fastest

  RefArray() = default;
  explicit RefArray(const std::array<int64_t, kMaxDims>& shape)
      : ne(shape), v(static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]), 0.0) {}
  int64_t size() const { return static_cast<int64_t>(v.size()); }
  size_t index(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    GL_ASSERT(i0 >= 0 && i0 < ne[0] && i1 >= 0 && i1 < ne[1] && i2 >= 0 && i2 < ne[2] && i3 >= 0 && i3 < ne[3],
              "RefArray: index out of range");
    return static_cast<size_t>(i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3)));
  }
  double at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const { return v[index(i0, i1, i2, i3)]; }
  double& at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) { return v[index(i0, i1, i2, i3)]; }
};

// Exact decoders of the stored formats.
double half_to_double(uint16_t h);
double bf16_to_double(uint16_t h);

// Round-to-nearest-even of x to a binary float format with `precision`
// significant bits, minimum normal exponent `emin` and largest finite value
// `max_finite` (overflow gives +-inf). x must be finite.
double round_to_format(double x, int precision, int emin, double max_finite);
double round_to_half(double x);  // IEEE binary16
double round_to_bf16(double x);  // bfloat16

// Element (i0, i1, i2, i3) of t, decoded from the root tensor's bytes.
double decode_element(const Tensor& t, std::span<const uint8_t> root_bytes, int64_t i0, int64_t i1, int64_t i2,
                      int64_t i3);
// All of t's elements in logical order. root_bytes starts at root(t)'s first byte.
RefArray decode(const Tensor& t, std::span<const uint8_t> root_bytes);

}  // namespace gl::test
