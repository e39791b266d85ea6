#version 450
// gdr_prep.comp - GATED_DELTA_RULE in chunked (WY / UT) form, part 1 of 2 (gdr_scan.comp is 2):
// everything that does not depend on the state, for all chunks and heads at once. One work group
// per (chunk of kC tokens, value head j). With gamma_i the in-chunk cumulative log decay,
// D[i][m] = exp(gamma_i - gamma_m), P_i = exp(gamma_i), padded tokens zero with g = beta = 0:
//   A = strictly lower (diag(beta) K K^T .* D)        M = lower-incl-diag (Q K^T .* D)
//   W = (I + A)^-1 diag(beta P) K                      U = (I + A)^-1 diag(beta) V
// written to the node's workspace with diag(P) Q, diag(D[last]) K and P_last (the layout is
// gdr_chunk.glsl's). The solve is a forward substitution, one column of [K | V] per invocation.
// Compiled with F32_QKV (gdr_prep_f32, for F32 q, k and v) the reads index the f32 arrays
// directly: the per-element type switch of load_q/k/v made each read wait for the one before
// (H100, 9B at 512 tokens: 738 -> 452 us a layer, s16.md). The Gram tiles and the solve read
// past the chunk's tokens at its last token and zero the value after, not under a bounds branch.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gdr_chunk.glsl"

layout(local_size_x = 256) in;

TENSOR(0, q)
TENSOR(1, k)
TENSOR(2, v)
TENSOR(3, g)
TENSOR(4, b)
layout(binding = 5) buffer Ws { float ws[]; };

layout(push_constant) uniform Push {
  uint q_nb0, q_nb1, q_nb2, k_nb0, k_nb1, k_nb2, v_nb0, v_nb1, v_nb2, g_nb0, g_nb1, b_nb0, b_nb1;
  uint q_off, k_off, v_off, g_off, b_off, ws_off;  // q .. b at the pass's first token
  uint dk, dv, hk, hv, n_tokens, n_chunks;          // n_tokens: of this pass
  uint types;                                       // q | k << 4 | v << 8 | g << 12 | beta << 16
} pc;

shared float gam[kC], bet[kC];
shared float ats[kC * kC];  // ats[m * kC + i] = A[i][m]

uint tq() { return pc.types & 15u; }
uint tk() { return (pc.types >> 4) & 15u; }

uint key_at(uint jq, uint t0, uint i, uint ik) { return pc.k_off + ik * pc.k_nb0 + jq * pc.k_nb1 + (t0 + i) * pc.k_nb2; }
uint query_at(uint jq, uint t0, uint i, uint ik) { return pc.q_off + ik * pc.q_nb0 + jq * pc.q_nb1 + (t0 + i) * pc.q_nb2; }
uint value_at(uint j, uint i, uint iv) { return pc.v_off + iv * pc.v_nb0 + j * pc.v_nb1 + i * pc.v_nb2; }
#ifdef F32_QKV
float key(uint jq, uint t0, uint i, uint ik) { return k32[key_at(jq, t0, i, ik)]; }
float query(uint jq, uint t0, uint i, uint ik) { return q32[query_at(jq, t0, i, ik)]; }
float value(uint j, uint i, uint iv) { return v32[value_at(j, i, iv)]; }
#else
float key(uint jq, uint t0, uint i, uint ik) { return load_k(tk(), key_at(jq, t0, i, ik)); }
float query(uint jq, uint t0, uint i, uint ik) { return load_q(tq(), query_at(jq, t0, i, ik)); }
float value(uint j, uint i, uint iv) { return load_v((pc.types >> 8) & 15u, value_at(j, i, iv)); }
#endif

// gamma (cumulative log decay) and beta of the chunk's tokens, zero past its end.
void load_gates(uint j, uint t0, uint len) {
  uint tid = gl_LocalInvocationID.x;
  uint tg = (pc.types >> 12) & 15u, tb = (pc.types >> 16) & 15u;
  if (tid < kC) {
    gam[tid] = tid < len ? load_g(tg, pc.g_off + j * pc.g_nb0 + (t0 + tid) * pc.g_nb1) : 0.0;
    bet[tid] = tid < len ? load_b(tb, pc.b_off + j * pc.b_nb0 + (t0 + tid) * pc.b_nb1) : 0.0;
  }
  barrier();
  float s = 0.0;
  if (tid < kC)
    for (uint m = 0u; m <= tid; ++m) s += gam[m];
  barrier();
  if (tid < kC) gam[tid] = s;
  barrier();
}

// A^T into shared memory and M^T into the workspace: one 4 x 4 tile of K K^T and Q K^T per invocation.
void gram(uint jq, uint t0, uint len, uint hc) {
  uint tid = gl_LocalInvocationID.x, i0 = (tid / 16u) * 4u, m0 = (tid % 16u) * 4u;
  float kk[4][4], qk[4][4];  // indexed by constants only (unrolled): registers, not local memory
  [[unroll]] for (uint r = 0u; r < 4u; ++r)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) kk[r][c] = qk[r][c] = 0.0;
  if (i0 + 3u >= m0 && m0 < len) {
    for (uint ik = 0u; ik < pc.dk; ++ik) {
      float km[4], ki[4], qi[4];
      [[unroll]] for (uint r = 0u; r < 4u; ++r) {
        uint mc = min(m0 + r, len - 1u), ic = min(i0 + r, len - 1u);
        float km_r = key(jq, t0, mc, ik), ki_r = key(jq, t0, ic, ik), qi_r = query(jq, t0, ic, ik);
        km[r] = m0 + r < len ? km_r : 0.0;
        ki[r] = i0 + r < len ? ki_r : 0.0;
        qi[r] = i0 + r < len ? qi_r : 0.0;
      }
      [[unroll]] for (uint r = 0u; r < 4u; ++r)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          kk[r][c] += ki[r] * km[c];
          qk[r][c] += qi[r] * km[c];
        }
    }
  }
  uint mt = gdr_mt(pc.ws_off, hc, pc.dk, pc.dv);
  [[unroll]] for (uint c = 0u; c < 4u; ++c)
    [[unroll]] for (uint r = 0u; r < 4u; ++r) {
      uint i = i0 + r, m = m0 + c;
      float d = m <= i ? exp(gam[i] - gam[m]) : 0.0;
      ats[m * kC + i] = m < i ? bet[i] * d * kk[r][c] : 0.0;
      ws[mt + m * kC + i] = d * qk[r][c];
    }
}

void main() {
  uint c = gl_WorkGroupID.x % pc.n_chunks, j = gl_WorkGroupID.x / pc.n_chunks;
  if (j >= pc.hv) return;  // uniform per group
  uint jq = j % pc.hk, t0 = c * kC, len = min(kC, pc.n_tokens - t0), tid = gl_LocalInvocationID.x;
  uint hc = j * pc.n_chunks + c;
  load_gates(j, t0, len);
  gram(jq, t0, len, hc);
  // diag(P) Q transposed and diag(D[last]) K (padded g = 0: gamma[kC - 1] = gamma[len - 1]).
  uint qt = gdr_qt(pc.ws_off, hc, pc.dk, pc.dv), kd = gdr_kd(pc.ws_off, hc, pc.dk, pc.dv);
  for (uint e = tid; e < pc.dk * kC; e += 256u) {
    uint ik = e / kC, i = e % kC;
    ws[qt + ik * kC + i] = i < len ? exp(gam[i]) * query(jq, t0, i, ik) : 0.0;
    ws[kd + i * pc.dk + ik] = i < len ? exp(gam[kC - 1u] - gam[i]) * key(jq, t0, i, ik) : 0.0;
  }
  if (tid == 0u) ws[gdr_plast(pc.ws_off, hc, pc.dk, pc.dv)] = exp(gam[kC - 1u]);
  barrier();
  // Columns of [diag(beta P) K | diag(beta) V] through the solve: W^T rows and U columns.
  uint wt = gdr_wt(pc.ws_off, hc, pc.dk, pc.dv), u = gdr_u(pc.ws_off, hc, pc.dk, pc.dv);
  for (uint col = tid; col < pc.dk + pc.dv; col += 256u) {
    bool is_w = col < pc.dk;
    uint iv = is_w ? 0u : col - pc.dk, ik = min(col, pc.dk - 1u);
    float x[kC];
    [[unroll]] for (uint i = 0u; i < kC; ++i) {
      uint ic = min(i, len - 1u);
      float kv = key(jq, t0, ic, ik), vv = value(j, t0 + ic, iv);
      x[i] = i < len ? bet[i] * (is_w ? exp(gam[i]) * kv : vv) : 0.0;
    }
    [[unroll]] for (uint m = 0u; m < kC - 1u; ++m) {
      float xm = x[m];
      [[unroll]] for (uint i = m + 1u; i < kC; ++i) x[i] -= ats[m * kC + i] * xm;
    }
    if (is_w) {
      [[unroll]] for (uint i = 0u; i < kC; ++i) ws[wt + col * kC + i] = x[i];
    } else {
      [[unroll]] for (uint i = 0u; i < kC; ++i) ws[u + i * pc.dv + iv] = x[i];
    }
  }
}
