// layers.cpp - gated attention, Gated DeltaNet and FFN blocks (spec sections 5-7).
#include "layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gl::qwen35::detail {
namespace {

Tensor* named(Tensor* t, const char* name, int il) {
  return set_name(t, il >= 0 ? fmt::format("{}-{}", name, il) : std::string(name));
}

constexpr size_t kF32 = sizeof(float);

}  // namespace

namespace {

struct MaskBuffer {
  std::vector<float> mask;
  int n_kv = -1, n_rows = -1, pos0 = 0;
};

// Row i's slots [from, to) set to 0 (seen) or -inf.
void set_slots(float* row, int from, int to, bool seen) {
  if (from < to) std::fill(row + from, row + to, seen ? 0.0f : -std::numeric_limits<float>::infinity());
}

}  // namespace

const std::vector<float>& causal_mask(int n_kv, int n_rows, int pos0) {
  thread_local MaskBuffer b;
  const bool again = b.n_kv == n_kv && b.n_rows == n_rows;
  if (!again) b.mask.assign(static_cast<size_t>(n_kv) * n_rows, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < n_rows; ++i) {
    float* row = b.mask.data() + static_cast<size_t>(i) * n_kv;
    const int end = std::clamp(pos0 + i + 1, 0, n_kv);                // slots [0, end) seen now
    const int was = again ? std::clamp(b.pos0 + i + 1, 0, n_kv) : 0;  // and at the last call
    set_slots(row, was, end, true);
    set_slots(row, end, was, false);
  }
  b.n_kv = n_kv, b.n_rows = n_rows, b.pos0 = pos0;
  return b.mask;
}

Tensor* norm(StepCtx& s, Tensor* x, Tensor* w, const char* name, int il) {
  return named(mul(s.ctx, rms_norm(s.ctx, x, s.hp.eps), w), name, il);
}

Tensor* attention(StepCtx& s, const LayerWeights& w, Tensor* x, Tensor* k_cache, Tensor* v_cache, int il) {
  Context& c = s.ctx;
  const Hparams& hp = s.hp;
  const int64_t hd = hp.head_dim, nh = hp.n_head, nkv = hp.n_head_kv, T = s.shape.n_tokens, nkv_span = s.shape.n_kv;

  // q_proj output is per head [query (hd) | gate (hd)]: two strided views.
  Tensor* qg = named(mul_mat(c, w.wq, x), "attn_qg", il);  // [2 hd nh, T]
  Tensor* q = view_3d(c, qg, hd, nh, T, 2 * hd * kF32, 2 * hd * nh * kF32, 0);
  Tensor* gate = view_3d(c, qg, hd, nh, T, 2 * hd * kF32, 2 * hd * nh * kF32, hd * kF32);
  Tensor* k = reshape(c, mul_mat(c, w.wk, x), {hd, nkv, T});
  Tensor* v = mul_mat(c, w.wv, x);  // [hd nkv, T]

  q = mul(c, rms_norm(c, q, hp.eps), w.q_norm);
  k = mul(c, rms_norm(c, k, hp.eps), w.k_norm);
  q = named(rope(c, q, s.in.pos, hp.rope_dims, hp.rope_base, RopeMode::NEOX), "q_rope", il);
  k = named(rope(c, k, s.in.pos, hp.rope_dims, hp.rope_base, RopeMode::NEOX), "k_rope", il);

  // Cache rows are positions; the views below read the first n_kv of them.
  Tensor* kc = set_rows(c, k_cache, reshape(c, k, {hd * nkv, T}), s.in.pos);
  Tensor* vc = set_rows(c, v_cache, v, s.in.pos);
  const size_t ke = dtype_traits(k_cache->type).block_bytes, ve = dtype_traits(v_cache->type).block_bytes;
  Tensor* K = view_3d(c, kc, hd, nkv, nkv_span, hd * ke, hd * nkv * ke, 0);  // [hd, nkv, n_kv]
  Tensor* V = view_3d(c, vc, hd, nkv, nkv_span, hd * ve, hd * nkv * ve, 0);
  // GQA: query head h reads kv head h / (nh / nkv). One fused op: no score matrix, no V copy.
  // No mask: the span ends at the step's last token (StepShape::causal), so causal attention is it.
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  Tensor* o = named(flash_attn(c, q, K, V, s.in.kq_mask, scale, s.in.kq_mask == nullptr), "attn", il);
  o = named(mul(c, o, sigmoid(c, gate)), "attn_gated", il);
  return named(mul_mat(c, w.wo, reshape(c, o, {hd * nh, T})), "attn_out", il);
}

GdnOut gated_delta_net(StepCtx& s, const LayerWeights& w, Tensor* x, Tensor* conv_cache, Tensor* state_cache, int il) {
  Context& c = s.ctx;
  const Hparams& hp = s.hp;
  const int64_t T = s.shape.n_tokens, dk = hp.d_k, dv = hp.d_v, hk = hp.n_k_heads, hv = hp.n_v_heads;
  const int64_t cdim = hp.conv_dim(), kc = hp.conv_kernel;

  Tensor* qkv = named(mul_mat(c, w.wqkv, x), "gdn_qkv", il);  // [conv_dim, T]
  Tensor* z = mul_mat(c, w.wgate, x);                         // [hv dv, T]
  Tensor* beta = sigmoid(c, mul_mat(c, w.ssm_beta, x));       // [hv, T]
  Tensor* a = mul_mat(c, w.ssm_alpha, x);                     // [hv, T]
  // g = -exp(A_log) * softplus(a + dt_bias): log-space decay, <= 0
  Tensor* g = named(mul(c, softplus(c, add(c, a, w.ssm_dt)), w.ssm_a), "gdn_g", il);

  // Causal conv over [old Kc-1 inputs | new inputs]; the last Kc-1 columns become the new state.
  Tensor* window = named(concat(c, conv_cache, qkv, 1), "conv_window", il);  // [conv_dim, Kc-1+T]
  Tensor* conv = named(silu(c, ssm_conv(c, window, w.ssm_conv1d)), "conv_out", il);
  s.effects.push_back(
      cpy(c, view_2d(c, window, cdim, kc - 1, cdim * kF32, static_cast<size_t>(T * cdim) * kF32), conv_cache));

  // q and k heads sit side by side in the conv output: one L2 norm over both (per head row).
  const size_t row = static_cast<size_t>(cdim) * kF32;
  Tensor* qk = l2_norm(c, view_3d(c, conv, dk, 2 * hk, T, dk * kF32, row, 0), 1e-6f);  // [dk, 2 hk, T]
  const size_t qk_row = static_cast<size_t>(2 * hk * dk) * kF32;
  Tensor* q = scale(c, view_3d(c, qk, dk, hk, T, dk * kF32, qk_row, 0), 1.0f / std::sqrt(static_cast<float>(dk)));
  Tensor* k = view_3d(c, qk, dk, hk, T, dk * kF32, qk_row, hk * dk * kF32);
  Tensor* v = view_3d(c, conv, dv, hv, T, dv * kF32, row, 2 * hk * dk * kF32);

  GdrResult r = gated_delta_rule(c, q, k, v, g, beta, state_cache, s.shape.n_states);
  set_name(r.node, fmt::format("gdr-{}", il));
  const size_t state_bytes = static_cast<size_t>(dv * dk * hv) * kF32;
  Tensor* last = view_3d(c, r.states, dv, dk, hv, dv * kF32, dv * dk * kF32,
                         static_cast<size_t>(s.shape.n_states - 1) * state_bytes);
  s.effects.push_back(cpy(c, last, state_cache));

  // Gated RMSNorm per value head (plain weight), then silu(z) and the output projection.
  // The product's input is the gate's own node (not a reshape of it), so a fused kernel may hand
  // the output projection its int8 rows (CUDA, FAST).
  Tensor* o = mul(c, rms_norm(c, r.out, hp.eps), w.ssm_norm);                   // [dv, hv, T]
  o = named(mul(c, silu(c, z), reshape(c, o, {dv * hv, T})), "gdn_gated", il);  // [hv dv, T]
  Tensor* out = named(mul_mat(c, w.ssm_out, o), "gdn_out", il);
  return {out, r.states, window};
}

}  // namespace gl::qwen35::detail
