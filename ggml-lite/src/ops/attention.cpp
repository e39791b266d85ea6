// attention.cpp - builders for softmax and rotary embeddings.
#include "builder.h"

namespace gl {

Tensor* softmax(Context& ctx, Tensor* a, Tensor* mask, float scale, bool causal) {
  const Op op = Op::SOFTMAX;
  detail::require_float(op, a, "a");
  if (mask) {
    detail::require_type(op, mask, DType::F32, "mask");
    GL_OP_CHECK(mask->ne[0] == a->ne[0] && mask->ne[1] == a->ne[1] && mask->ne[2] == 1 && mask->ne[3] == 1, op,
                "mask {} must be [n_kv, n_q] = [{}, {}]", shape_str(*mask), a->ne[0], a->ne[1]);
    return ctx.new_op(op, a->type, a->ne, SoftmaxParams{scale, causal}, {a, mask});
  }
  return ctx.new_op(op, a->type, a->ne, SoftmaxParams{scale, causal}, {a});
}

Tensor* rope(Context& ctx, Tensor* x, Tensor* pos, int n_dims, float freq_base, RopeMode mode, float freq_scale) {
  const Op op = Op::ROPE;
  detail::require_float(op, x, "x");
  detail::require_type(op, pos, DType::I32, "pos");
  GL_OP_CHECK(n_dims > 0 && n_dims % 2 == 0 && n_dims <= x->ne[0], op,
              "n_dims {} must be even and within the head size {}", n_dims, x->ne[0]);
  GL_OP_CHECK(nelements(*pos) == x->ne[2] && x->ne[3] == 1, op, "x {} needs one position per token, pos has {}",
              shape_str(*x), nelements(*pos));
  return ctx.new_op(op, x->type, x->ne, RopeParams{n_dims, freq_base, freq_scale, mode}, {x, pos});
}

}  // namespace gl
