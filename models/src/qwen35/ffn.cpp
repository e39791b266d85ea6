// ffn.cpp - dense SwiGLU FFN and the Qwen3.5 MoE block (spec section 7).
#include <fmt/format.h>

#include "layers.h"

namespace gl::qwen35::detail {
namespace {

Tensor* named(Tensor* t, const char* name, int il) { return set_name(t, fmt::format("{}-{}", name, il)); }

Tensor* swiglu_ffn(Context& c, Tensor* gate_w, Tensor* up_w, Tensor* down_w, Tensor* x) {
  return mul_mat(c, down_w, swiglu(c, mul_mat(c, gate_w, x), mul_mat(c, up_w, x)));
}

// softmax over all experts, top-k, renormalised weights; shared expert gated by sigmoid.
Tensor* moe(StepCtx& s, const LayerWeights& w, Tensor* x, int il) {
  Context& c = s.ctx;
  const int64_t T = x->ne[1], n_embd = x->ne[0], k = s.hp.n_expert_used, E = s.hp.n_expert;
  Tensor* probs = named(softmax(c, mul_mat(c, w.ffn_gate_inp, x), nullptr, 1.0f, false), "moe_probs", il);  // [E, T]
  Tensor* ids = named(top_k(c, probs, static_cast<int>(k)), "moe_ids", il);                                 // [k, T]
  Tensor* weights = reshape(c, get_rows(c, reshape(c, probs, {1, E, T}), ids), {k, T});
  weights = div(c, weights, sum_rows(c, weights));

  Tensor* x3 = reshape(c, x, {n_embd, 1, T});
  Tensor* gate = mul_mat_id(c, w.ffn_gate_exps, x3, ids);  // [Fe, k, T]
  Tensor* up = mul_mat_id(c, w.ffn_up_exps, x3, ids);
  Tensor* experts = mul_mat_id(c, w.ffn_down_exps, swiglu(c, gate, up), ids);  // [n_embd, k, T]
  experts = mul(c, experts, reshape(c, weights, {1, k, T}));
  // The k weighted experts summed in one reduction over a [k, n_embd, T] view (one kernel, a
  // double sum per element) rather than a copy and k - 1 adds.
  Tensor* y = reshape(c, sum_rows(c, permute(c, experts, 1, 0, 2, 3)), {n_embd, T});
  if (w.ffn_gate_shexp) {
    Tensor* shared = swiglu_ffn(c, w.ffn_gate_shexp, w.ffn_up_shexp, w.ffn_down_shexp, x);
    Tensor* sgate = sigmoid(c, mul_mat(c, w.ffn_gate_inp_shexp, x));  // [1, T]
    y = add(c, y, mul(c, shared, sgate));
  }
  return named(y, "moe_out", il);
}

}  // namespace

Tensor* ffn(StepCtx& s, const LayerWeights& w, Tensor* x, int il) {
  if (w.ffn_gate_inp) return moe(s, w, x, il);
  return named(swiglu_ffn(s.ctx, w.ffn_gate, w.ffn_up, w.ffn_down, x), "ffn_out", il);
}

}  // namespace gl::qwen35::detail
