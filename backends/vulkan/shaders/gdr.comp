#version 450
// gdr.comp - GATED_DELTA_RULE, token by token: for value head j (query/key head j % Hk) and each
// token t, S <- S * exp(g) ; d = beta * (v - S^T k) ; S <- S + k d^T ; o = S^T q, with S [Dk, Dv]
// starting from the input state (never written). Every value column of S evolves on its own
// (q, k, g and beta are shared), so one thread owns one column: Dk floats in private memory
// (Dk <= kMaxDk, else declined). Outputs: o [Dv, Hv, T], then the state after each of the last
// n_states tokens [Dv, Dk, Hv] each, as the op's flat F32 result.
#include "common.glsl"

#define kMaxDk 256u

layout(local_size_x = 64) in;

TENSOR(0, q)
TENSOR(1, k)
TENSOR(2, v)
TENSOR(3, g)
TENSOR(4, b)
TENSOR(5, s)
TENSOR(6, d)

layout(push_constant) uniform Push {
  uint q_nb0, q_nb1, q_nb2, k_nb0, k_nb1, k_nb2, v_nb0, v_nb1, v_nb2;
  uint g_nb0, g_nb1, b_nb0, b_nb1, s_nb0, s_nb1, s_nb2;
  uint q_off, k_off, v_off, g_off, b_off, s_off, d_off;
  uint dk, dv, hk, hv, n_tokens, n_states;
  uint types;  // q | k << 4 | v << 8 | g << 12 | beta << 16 | state << 20
} pc;

void main() {
  uint idx = group_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= pc.hv * pc.dv) return;
  uint j = idx / pc.dv, iv = idx % pc.dv, jq = j % pc.hk;
  uint tq = pc.types & 15u, tk = (pc.types >> 4) & 15u, tv = (pc.types >> 8) & 15u;
  uint tg = (pc.types >> 12) & 15u, tb = (pc.types >> 16) & 15u, ts = (pc.types >> 20) & 15u;
  float col[kMaxDk];
  for (uint ik = 0u; ik < pc.dk; ++ik) col[ik] = load_s(ts, pc.s_off + iv * pc.s_nb0 + ik * pc.s_nb1 + j * pc.s_nb2);
  uint n_out = pc.dv * pc.hv * pc.n_tokens;
  uint first_snapshot = pc.n_tokens - pc.n_states;
  for (uint t = 0u; t < pc.n_tokens; ++t) {
    float decay = exp(load_g(tg, pc.g_off + j * pc.g_nb0 + t * pc.g_nb1));
    float beta = load_b(tb, pc.b_off + j * pc.b_nb0 + t * pc.b_nb1);
    uint q0 = pc.q_off + jq * pc.q_nb1 + t * pc.q_nb2, k0 = pc.k_off + jq * pc.k_nb1 + t * pc.k_nb2;
    float u = 0.0;
    for (uint ik = 0u; ik < pc.dk; ++ik) {
      col[ik] *= decay;
      u += col[ik] * load_k(tk, k0 + ik * pc.k_nb0);
    }
    float delta = beta * (load_v(tv, pc.v_off + iv * pc.v_nb0 + j * pc.v_nb1 + t * pc.v_nb2) - u);
    float o = 0.0;
    for (uint ik = 0u; ik < pc.dk; ++ik) {
      col[ik] += load_k(tk, k0 + ik * pc.k_nb0) * delta;
      o += col[ik] * load_q(tq, q0 + ik * pc.q_nb0);
    }
    d32[pc.d_off + (t * pc.hv + j) * pc.dv + iv] = o;
    if (t >= first_snapshot) {
      uint base = pc.d_off + n_out + ((t - first_snapshot) * pc.hv + j) * pc.dk * pc.dv + iv;
      for (uint ik = 0u; ik < pc.dk; ++ik) d32[base + ik * pc.dv] = col[ik];
    }
  }
}
