#version 450
// gdr_split.comp - GATED_DELTA_RULE as gdr.comp (the same recurrence, token by token, from the
// input state, same outputs), with the state in registers and each column's sums split over k:
// a work group takes kCols value columns of one head, and each column's Dk rows are spread over
// kSlices neighbouring invocations (row ik on slice ik % kSlices), kMaxPer rows each. The two dot
// products per token (S^T k and S^T q) are partial sums combined by a butterfly of subgroup
// shuffles (every slice ends with the same bits: each step adds the same two values).
// gdr.comp keeps each column in one invocation's private array, which ends up in slow local memory
// and leaves most of the GPU idle (one invocation per column). A token's arithmetic does not depend
// on how many tokens share the call, so verify (K + 1 tokens) gives the bits of K + 1 decodes.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#define kSlices 8u
#define kCols 32u
#define kMaxPer 16u  // Dk <= kSlices * kMaxPer

layout(local_size_x = 256) in;

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

// The sum of v over the kSlices invocations of this column.
float slice_sum(float v) {
  for (uint step = kSlices / 2u; step > 0u; step >>= 1) v += subgroupShuffleXor(v, step);
  return v;
}

// Rows slice, slice + kSlices, ... of a vector (element ik at base + ik * nb) into r, zero past
// Dk. The type is a uniform branch outside the loop and every load is unconditional (the row
// clamped, zeroed after), so all kMaxPer loads are in flight at once: a load under `ik < Dk` or a
// per-element type branch waits for the one before (16.7 us a decode layer on the H100).
#define LOAD_SLICE(r, NAME, type, base, nb)                                                        \
  {                                                                                                \
    if ((type) == TYPE_F32) {                                                                      \
      [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) r[i] = NAME##32[(base) + min(slice + i * kSlices, pc.dk - 1u) * (nb)]; \
    } else {                                                                                       \
      [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) r[i] = load_##NAME(type, (base) + min(slice + i * kSlices, pc.dk - 1u) * (nb)); \
    }                                                                                              \
    [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) r[i] = slice + i * kSlices < pc.dk ? r[i] : 0.0; \
  }

// Token t's inputs for this invocation: its slice of k and q (zero past Dk), its column's v (zero
// past Dv), the head's log-decay g and beta.
void load_token(uint t, uint j, uint jq, uint iv, bool live, uint slice, out float kv[kMaxPer], out float qv[kMaxPer],
                out float vv, out float gv, out float bv) {
  uint tq = pc.types & 15u, tk = (pc.types >> 4) & 15u, tv = (pc.types >> 8) & 15u;
  uint tg = (pc.types >> 12) & 15u, tb = (pc.types >> 16) & 15u;
  uint q0 = pc.q_off + jq * pc.q_nb1 + t * pc.q_nb2, k0 = pc.k_off + jq * pc.k_nb1 + t * pc.k_nb2;
  LOAD_SLICE(kv, k, tk, k0, pc.k_nb0)
  LOAD_SLICE(qv, q, tq, q0, pc.q_nb0)
  vv = load_v(tv, pc.v_off + min(iv, pc.dv - 1u) * pc.v_nb0 + j * pc.v_nb1 + t * pc.v_nb2);
  vv = live ? vv : 0.0;
  gv = load_g(tg, pc.g_off + j * pc.g_nb0 + t * pc.g_nb1);
  bv = load_b(tb, pc.b_off + j * pc.b_nb0 + t * pc.b_nb1);
}

void main() {
  uint col_groups = (pc.dv + kCols - 1u) / kCols;
  uint grp = group_index();
  if (grp >= pc.hv * col_groups) return;  // uniform per group
  uint j = grp / col_groups, jq = j % pc.hk;
  uint slice = gl_LocalInvocationID.x % kSlices;
  uint iv = (grp % col_groups) * kCols + gl_LocalInvocationID.x / kSlices;
  bool live = iv < pc.dv;  // columns past Dv still take part in the subgroup adds
  uint ts = (pc.types >> 20) & 15u;
  float st[kMaxPer];
  LOAD_SLICE(st, s, ts, pc.s_off + min(iv, pc.dv - 1u) * pc.s_nb0 + j * pc.s_nb2, pc.s_nb1)
  if (!live) {
    [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) st[i] = 0.0;
  }
  uint n_out = pc.dv * pc.hv * pc.n_tokens;
  uint first_snapshot = pc.n_tokens - pc.n_states;
  // Token t + 1's inputs are loaded while token t is computed: the loads do not depend on the
  // state, and waiting for them each token would make the serial loop latency-bound.
  float kn[kMaxPer], qn[kMaxPer], vn, gn, bn;
  if (pc.n_tokens > 0u) load_token(0u, j, jq, iv, live, slice, kn, qn, vn, gn, bn);
  for (uint t = 0u; t < pc.n_tokens; ++t) {
    float kv[kMaxPer] = kn, qv[kMaxPer] = qn;
    float vv = vn, decay = exp(gn), beta = bn;
    if (t + 1u < pc.n_tokens) load_token(t + 1u, j, jq, iv, live, slice, kn, qn, vn, gn, bn);
    float u = 0.0;
    [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) {
      st[i] *= decay;
      u += st[i] * kv[i];
    }
    u = slice_sum(u);
    float delta = beta * (vv - u);
    float o = 0.0;
    [[unroll]] for (uint i = 0u; i < kMaxPer; ++i) {
      st[i] += kv[i] * delta;
      o += st[i] * qv[i];
    }
    o = slice_sum(o);
    if (live && slice == 0u) d32[pc.d_off + (t * pc.hv + j) * pc.dv + iv] = o;
    if (live && t >= first_snapshot) {
      uint base = pc.d_off + n_out + ((t - first_snapshot) * pc.hv + j) * pc.dk * pc.dv + iv;
      for (uint i = 0u; i < kMaxPer; ++i) {
        uint ik = slice + i * kSlices;
        if (ik < pc.dk) d32[base + ik * pc.dv] = st[i];
      }
    }
  }
}
