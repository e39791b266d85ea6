// matmul.cpp - builders for dense and expert-routed matrix products.
#include "builder.h"

namespace gl {

Tensor* mul_mat(Context& ctx, Tensor* w, Tensor* x) {
  const Op op = Op::MUL_MAT;
  detail::require_float(op, x, "x");
  GL_OP_CHECK(w->type != DType::I32, op, "w must be a float or quantized type");
  GL_OP_CHECK(w->ne[0] == x->ne[0], op, "inner dims differ: w {} x {}", shape_str(*w), shape_str(*x));
  GL_OP_CHECK(x->ne[2] % w->ne[2] == 0 && x->ne[3] % w->ne[3] == 0, op, "w batch dims of {} do not broadcast to x {}",
              shape_str(*w), shape_str(*x));
  return ctx.new_op(op, DType::F32, {w->ne[1], x->ne[1], x->ne[2], x->ne[3]}, NoParams{}, {w, x});
}

Tensor* mul_mat_id(Context& ctx, Tensor* experts, Tensor* x, Tensor* ids) {
  const Op op = Op::MUL_MAT_ID;
  detail::require_float(op, x, "x");
  detail::require_type(op, ids, DType::I32, "ids");
  GL_OP_CHECK(experts->type != DType::I32, op, "experts must be a float or quantized type");
  GL_OP_CHECK(experts->ne[3] == 1, op, "experts must be 3-D [K, N, E], got {}", shape_str(*experts));
  GL_OP_CHECK(experts->ne[0] == x->ne[0], op, "inner dims differ: experts {} x {}", shape_str(*experts), shape_str(*x));
  GL_OP_CHECK(ids->ne[2] == 1 && ids->ne[3] == 1 && x->ne[3] == 1, op, "ids must be [U, T] and x [K, X1, T]");
  GL_OP_CHECK(x->ne[2] == ids->ne[1], op, "x has {} tokens, ids {}", x->ne[2], ids->ne[1]);
  GL_OP_CHECK(ids->ne[0] % x->ne[1] == 0, op, "x rows per token ({}) must divide the ids per token ({})", x->ne[1],
              ids->ne[0]);
  return ctx.new_op(op, DType::F32, {experts->ne[1], ids->ne[0], ids->ne[1], 1}, NoParams{}, {experts, x, ids});
}

}  // namespace gl
