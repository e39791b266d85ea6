// reduce.cpp - builders for per-row reductions and selections.
#include "builder.h"

namespace gl {

Tensor* argmax(Context& ctx, Tensor* a) {
  detail::require_float(Op::ARGMAX, a, "a");
  return ctx.new_op(Op::ARGMAX, DType::I32, {a->ne[1], a->ne[2], a->ne[3], 1}, NoParams{}, {a});
}

Tensor* top_k(Context& ctx, Tensor* a, int k) {
  detail::require_float(Op::TOP_K, a, "a");
  GL_OP_CHECK(k >= 1 && k <= a->ne[0], Op::TOP_K, "k {} must be in [1, {}]", k, a->ne[0]);
  return ctx.new_op(Op::TOP_K, DType::I32, {k, a->ne[1], a->ne[2], a->ne[3]}, TopKParams{k}, {a});
}

Tensor* sum_rows(Context& ctx, Tensor* a) {
  detail::require_float(Op::SUM_ROWS, a, "a");
  return ctx.new_op(Op::SUM_ROWS, DType::F32, {1, a->ne[1], a->ne[2], a->ne[3]}, NoParams{}, {a});
}

}  // namespace gl
