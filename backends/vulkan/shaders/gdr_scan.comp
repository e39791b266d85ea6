#version 450
// gdr_scan.comp - GATED_DELTA_RULE in chunked form, part 2 of 2 (see gdr_prep.comp): the only
// sequential part, n_chunks steps instead of n_tokens. One work group per (kTv value columns,
// value head j) keeps its columns of the state S [Dk][kTv] in shared memory; per chunk
//   V' = U - W S        O = diag(P) Q S + M V'        S = P_last S + (diag(D[last]) K)^T V'
// (columns of S evolve independently). The outputs go to o [Dv, Hv, T] from the pass's first
// token, the final state to the node's state rows [Dv, Dk, Hv]; a later pass starts from those.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gdr_chunk.glsl"

#define kTv 16u
#define kMaxDk 256u
#define kRowsPer (kMaxDk / (256u / kTv))  // state rows per invocation in the update

layout(local_size_x = 256) in;

TENSOR(0, s)
TENSOR(1, d)
layout(binding = 2) readonly buffer Ws { float ws[]; };
layout(binding = 2) readonly buffer Ws4 { vec4 ws4[]; };

layout(push_constant) uniform Push {
  uint s_nb0, s_nb1, s_nb2, s_off;  // the incoming state: iv, ik, j
  uint ws_off;                      // a multiple of 4
  uint o_off, snap_off;             // in d: o at the pass's first token, the final state
  uint dk, dv, hv, n_tokens, n_chunks;
  uint s_type;
} pc;

shared float st[kMaxDk * kTv];  // [ik][col]
shared float vp[kC * kTv];      // [i][col]: V'

void main() {
  uint col_groups = (pc.dv + kTv - 1u) / kTv;
  uint j = gl_WorkGroupID.x / col_groups, col0 = (gl_WorkGroupID.x % col_groups) * kTv;
  if (j >= pc.hv) return;  // uniform per group
  uint tid = gl_LocalInvocationID.x, col = tid % kTv, iv = col0 + col, i0 = (tid / kTv) * 4u;
  bool live = iv < pc.dv;
  for (uint e = tid; e < pc.dk * kTv; e += 256u) {
    uint ik = e / kTv, v = col0 + e % kTv;
    st[e] = v < pc.dv ? load_s(pc.s_type, pc.s_off + v * pc.s_nb0 + ik * pc.s_nb1 + j * pc.s_nb2) : 0.0;
  }
  barrier();
  for (uint c = 0u; c < pc.n_chunks; ++c) {
    uint hc = j * pc.n_chunks + c, t0 = c * kC, len = min(kC, pc.n_tokens - t0);
    uint wt = gdr_wt(pc.ws_off, hc, pc.dk, pc.dv), qt = gdr_qt(pc.ws_off, hc, pc.dk, pc.dv);
    // Rows i0 .. i0 + 3 of column col: W S and diag(P) Q S.
    vec4 ws_acc = vec4(0.0), qs_acc = vec4(0.0);
    for (uint ik = 0u; ik < pc.dk; ++ik) {
      float sv = st[ik * kTv + col];
      ws_acc += ws4[(wt + ik * kC + i0) >> 2] * sv;
      qs_acc += ws4[(qt + ik * kC + i0) >> 2] * sv;
    }
    uint u = gdr_u(pc.ws_off, hc, pc.dk, pc.dv);
    for (uint r = 0u; r < 4u; ++r) vp[(i0 + r) * kTv + col] = live ? ws[u + (i0 + r) * pc.dv + iv] - ws_acc[r] : 0.0;
    barrier();
    uint mt = gdr_mt(pc.ws_off, hc, pc.dk, pc.dv);
    vec4 o = qs_acc;
    for (uint m = 0u; m < min(len, i0 + 4u); ++m) o += ws4[(mt + m * kC + i0) >> 2] * vp[m * kTv + col];
    for (uint r = 0u; r < 4u; ++r)
      if (live && i0 + r < len) d32[pc.o_off + ((t0 + i0 + r) * pc.hv + j) * pc.dv + iv] = o[r];
    barrier();  // every invocation is done reading st
    uint kd = gdr_kd(pc.ws_off, hc, pc.dk, pc.dv);
    float p_last = ws[gdr_plast(pc.ws_off, hc, pc.dk, pc.dv)];
    // S rows ik0 + 16 r of column col, all kRowsPer at once (independent loads in flight).
    uint ik0 = tid / kTv;
    float acc[kRowsPer];
    [[unroll]] for (uint r = 0u; r < kRowsPer; ++r) {
      uint ik = ik0 + r * (256u / kTv);
      acc[r] = ik < pc.dk ? p_last * st[ik * kTv + col] : 0.0;
    }
    for (uint i = 0u; i < len; ++i) {
      float vpi = vp[i * kTv + col];
      [[unroll]] for (uint r = 0u; r < kRowsPer; ++r) {
        uint ik = ik0 + r * (256u / kTv);
        if (ik < pc.dk) acc[r] += ws[kd + i * pc.dk + ik] * vpi;
      }
    }
    [[unroll]] for (uint r = 0u; r < kRowsPer; ++r) {
      uint ik = ik0 + r * (256u / kTv);
      if (ik < pc.dk) st[ik * kTv + col] = acc[r];
    }
    barrier();
  }
  if (live)
    for (uint ik = tid / kTv; ik < pc.dk; ik += 256u / kTv) d32[pc.snap_off + (j * pc.dk + ik) * pc.dv + iv] = st[ik * kTv + col];
}
