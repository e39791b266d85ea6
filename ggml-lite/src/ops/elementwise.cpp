// elementwise.cpp - builders for binary, unary and gated elementwise ops.
#include "builder.h"

namespace gl {
namespace {

Tensor* binary(Context& ctx, Op op, Tensor* a, Tensor* b) {
  detail::require_float(op, a, "a");
  detail::require_float(op, b, "b");
  GL_OP_CHECK(can_broadcast(*b, *a), op, "b {} does not broadcast to a {}", shape_str(*b), shape_str(*a));
  return ctx.new_op(op, a->type, a->ne, NoParams{}, {a, b});
}

Tensor* unary(Context& ctx, Op op, Tensor* a) {
  detail::require_float(op, a, "a");
  return ctx.new_op(op, a->type, a->ne, NoParams{}, {a});
}

}  // namespace

Tensor* add(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::ADD, a, b); }
Tensor* sub(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::SUB, a, b); }
Tensor* mul(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::MUL, a, b); }
Tensor* div(Context& ctx, Tensor* a, Tensor* b) { return binary(ctx, Op::DIV, a, b); }

Tensor* scale(Context& ctx, Tensor* a, float s, float bias) {
  detail::require_float(Op::SCALE, a, "a");
  return ctx.new_op(Op::SCALE, a->type, a->ne, ScaleParams{s, bias}, {a});
}

Tensor* silu(Context& ctx, Tensor* a) { return unary(ctx, Op::SILU, a); }
Tensor* sigmoid(Context& ctx, Tensor* a) { return unary(ctx, Op::SIGMOID, a); }
Tensor* softplus(Context& ctx, Tensor* a) { return unary(ctx, Op::SOFTPLUS, a); }
Tensor* exp(Context& ctx, Tensor* a) { return unary(ctx, Op::EXP, a); }

Tensor* swiglu(Context& ctx, Tensor* gate, Tensor* up) {
  detail::require_float(Op::SWIGLU, gate, "gate");
  detail::require_float(Op::SWIGLU, up, "up");
  GL_OP_CHECK(same_shape(*gate, *up), Op::SWIGLU, "gate {} and up {} differ", shape_str(*gate), shape_str(*up));
  return ctx.new_op(Op::SWIGLU, gate->type, gate->ne, NoParams{}, {gate, up});
}

}  // namespace gl
