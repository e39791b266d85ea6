// attention.cpp - builders for softmax, fused attention and rotary embeddings.
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

Tensor* flash_attn(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale, bool causal) {
  const Op op = Op::FLASH_ATTN;
  detail::require_float(op, q, "q");
  detail::require_float(op, k, "k");
  detail::require_float(op, v, "v");
  const int64_t dk = q->ne[0], h = q->ne[1], t = q->ne[2], hkv = k->ne[1], n = k->ne[2];
  GL_OP_CHECK(q->ne[3] == 1 && k->ne[3] == 1 && v->ne[3] == 1, op, "q {}, k {}, v {} must be 3-D", shape_str(*q),
              shape_str(*k), shape_str(*v));
  GL_OP_CHECK(k->ne[0] == dk, op, "k {} must have q's head size {}", shape_str(*k), dk);
  GL_OP_CHECK(v->ne[1] == hkv && v->ne[2] == n, op, "v {} must be [Dv, Hkv, N] = [Dv, {}, {}]", shape_str(*v), hkv, n);
  GL_OP_CHECK(hkv > 0 && h % hkv == 0, op, "q heads {} must be a multiple of kv heads {}", h, hkv);
  const std::array<int64_t, kMaxDims> ne{v->ne[0], h, t, 1};
  if (!mask) return ctx.new_op(op, DType::F32, ne, SoftmaxParams{scale, causal}, {q, k, v});
  detail::require_type(op, mask, DType::F32, "mask");
  GL_OP_CHECK(mask->ne[0] == n && mask->ne[1] == t && mask->ne[2] == 1 && mask->ne[3] == 1, op,
              "mask {} must be [N, T] = [{}, {}]", shape_str(*mask), n, t);
  return ctx.new_op(op, DType::F32, ne, SoftmaxParams{scale, causal}, {q, k, v, mask});
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
