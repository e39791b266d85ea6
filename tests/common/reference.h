// reference.h - the float64 reference evaluator: one textbook function per op.
//
//   std::vector<gl::test::RefArray> srcs = ...;   // node's sources, decoded (ref_array.h)
//   gl::test::RefArray want = gl::test::reference_eval(*node, srcs);
//   // want.ne == node->ne; compare with the backend's output decoded the same way
//
// Every function is written from the op's contract in ops.def, not from any
// kernel: straight loops, double everywhere, no tiling and no fast paths. The
// result is the exact mathematical value of the op on the given inputs (up to
// double rounding); outputs a backend stores in F16/BF16/Q8_0 are compared
// against it in double, so their rounding shows up as error.
#pragma once

#include <span>

#include "common/ref_array.h"
#include "ggml-lite/tensor.h"

namespace gl::test {

// Evaluates node (op, params, ne; node.src for source metadata where an op
// needs it, e.g. VIEW strides) on srcs[i], the logical values of node.src[i].
RefArray reference_eval(const Tensor& node, std::span<const RefArray> srcs);

}  // namespace gl::test
