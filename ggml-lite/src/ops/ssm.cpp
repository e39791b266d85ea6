// ssm.cpp - builders for the Gated DeltaNet pieces: causal conv and the delta rule.
#include "builder.h"

namespace gl {

Tensor* ssm_conv(Context& ctx, Tensor* xs, Tensor* w) {
  const Op op = Op::SSM_CONV;
  detail::require_float(op, xs, "xs");
  detail::require_float(op, w, "w");
  const int64_t kc = w->ne[0];
  GL_OP_CHECK(w->ne[1] == xs->ne[0] && w->ne[2] == 1 && w->ne[3] == 1, op, "w {} must be [Kc, C] with C = {}",
              shape_str(*w), xs->ne[0]);
  GL_OP_CHECK(xs->ne[1] >= kc && xs->ne[2] == 1 && xs->ne[3] == 1, op,
              "xs {} must be [C, Kc-1+T] with T >= 1 (Kc = {})", shape_str(*xs), kc);
  return ctx.new_op(op, DType::F32, {xs->ne[0], xs->ne[1] - (kc - 1), 1, 1}, NoParams{}, {xs, w});
}

GdrResult gated_delta_rule(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* g, Tensor* beta, Tensor* state,
                           int n_states) {
  const Op op = Op::GATED_DELTA_RULE;
  for (const Tensor* t : {q, k, v, g, beta, state}) detail::require_float(op, t, "every input");
  const int64_t dk = q->ne[0], hk = q->ne[1], t_len = q->ne[2];
  const int64_t dv = v->ne[0], hv = v->ne[1];
  GL_OP_CHECK(same_shape(*q, *k) && q->ne[3] == 1, op, "q {} and k {} must be equal [Dk, Hk, T]", shape_str(*q),
              shape_str(*k));
  GL_OP_CHECK(v->ne[2] == t_len && v->ne[3] == 1 && hv % hk == 0, op,
              "v {} must be [Dv, Hv, T] with Hv a multiple of Hk = {}", shape_str(*v), hk);
  GL_OP_CHECK(g->ne[0] == hv && g->ne[1] == t_len && nelements(*g) == hv * t_len, op, "g {} must be [Hv, T]",
              shape_str(*g));
  GL_OP_CHECK(same_shape(*g, *beta), op, "beta {} must match g {}", shape_str(*beta), shape_str(*g));
  GL_OP_CHECK(state->ne[0] == dv && state->ne[1] == dk && state->ne[2] == hv && state->ne[3] == 1, op,
              "state {} must be [Dv, Dk, Hv] = [{}, {}, {}]", shape_str(*state), dv, dk, hv);
  GL_OP_CHECK(n_states >= 1 && n_states <= t_len, op, "n_states {} must be in [1, T = {}]", n_states, t_len);

  const int64_t n_out = dv * hv * t_len;
  const int64_t n_state = dv * dk * hv;
  Tensor* node =
      ctx.new_op(op, DType::F32, {n_out + n_state * n_states, 1, 1, 1}, GdrParams{n_states}, {q, k, v, g, beta, state});
  GdrResult r;
  r.node = node;
  r.out = view_3d(ctx, node, dv, hv, t_len, static_cast<size_t>(dv) * 4, static_cast<size_t>(dv * hv) * 4, 0);
  r.states = view(ctx, node, {dv, dk, hv, n_states},
                  {static_cast<size_t>(dv) * 4, static_cast<size_t>(dv * dk) * 4, static_cast<size_t>(n_state) * 4},
                  static_cast<size_t>(n_out) * 4);
  return r;
}

}  // namespace gl
