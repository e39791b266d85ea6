// reference_ops.h - per-family entry points of the reference evaluator (private to tests/common).
#pragma once

#include <span>

#include "common/ref_array.h"
#include "ggml-lite/tensor.h"

namespace gl::test::ref {

using Srcs = std::span<const RefArray>;

// reference.cpp
RefArray binary(const Tensor& node, Srcs s);  // ADD, SUB, MUL, DIV
RefArray unary(const Tensor& node, Srcs s);   // SCALE, SILU, SIGMOID, SOFTPLUS, EXP
RefArray swiglu(const Tensor& node, Srcs s);
RefArray norm(const Tensor& node, Srcs s);  // RMS_NORM, L2_NORM
RefArray argmax(const Tensor& node, Srcs s);
RefArray top_k(const Tensor& node, Srcs s);
RefArray sum_rows(const Tensor& node, Srcs s);

// reference_layout.cpp
RefArray get_rows(const Tensor& node, Srcs s);
RefArray set_rows(const Tensor& node, Srcs s);
RefArray concat(const Tensor& node, Srcs s);
RefArray view(const Tensor& node, Srcs s);
RefArray reshape(const Tensor& node, Srcs s);
RefArray permute(const Tensor& node, Srcs s);
RefArray transpose(const Tensor& node, Srcs s);
RefArray cont(const Tensor& node, Srcs s);
RefArray cpy(const Tensor& node, Srcs s);

// reference_nn.cpp
RefArray mul_mat(const Tensor& node, Srcs s);
RefArray mul_mat_id(const Tensor& node, Srcs s);
RefArray softmax(const Tensor& node, Srcs s);
RefArray flash_attn(const Tensor& node, Srcs s);
RefArray rope(const Tensor& node, Srcs s);
RefArray ssm_conv(const Tensor& node, Srcs s);
RefArray gated_delta_rule(const Tensor& node, Srcs s);

// Calls f(i0, i1, i2, i3) for every index of shape ne, i0 fastest.
template <class F>
void for_each_index(const std::array<int64_t, kMaxDims>& ne, F&& f) {
  for (int64_t i3 = 0; i3 < ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
}

}  // namespace gl::test::ref
