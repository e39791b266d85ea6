#version 450
// flash_attn_rows.comp - FLASH_ATTN for decode and verify (a few query rows): the keys are cut into
// chunks of kChunk, so a row's work spreads over many work groups instead of one.
//   mode 0: one work group per (query row, chunk): the chunk's scores w = q.k * scale + mask (one
//           subgroup per key, the dot product split over its lanes), their max m_c, the sum
//           s_c = sum exp(w - m_c) and o_c = sum exp(w - m_c) v, in key order, to the workspace.
//   mode 1: one work group per query row: M = max m_c, out = sum_c exp(m_c - M) o_c /
//           sum_c exp(m_c - M) s_c, in chunk order.
// A row's bits depend on its keys only (chunks past its causal end are empty and add zeros), never
// on how many rows share the call, so verify (K + 1 rows) gives the bits of K + 1 decodes. Keys
// with zero weight (masked) are skipped, so their v is never read; a row with nothing unmasked
// is all zeros (as flash_attn.comp).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#define kChunk 64u
#define kMaxDk 512u

#define kThreads 256u
#define kBatch 8u  // v loads in flight per invocation
#define kPer 8u     // k loads in flight per lane

layout(local_size_x = 256) in;

TENSOR(0, q)
TENSOR(1, k)
TENSOR(2, v)
TENSOR(3, m)
TENSOR(4, d)
layout(binding = 5) buffer Ws { float ws[]; };

layout(push_constant) uniform Push {
  uint q_nb0, q_nb1, q_nb2, k_nb0, k_nb1, k_nb2, v_nb0, v_nb1, v_nb2, m_nb0, m_nb1, d_nb0, d_nb1, d_nb2;
  uint q_off, k_off, v_off, m_off, d_off, ws_off;
  uint dk, dv, n_head, n_q, n_kv, group, has_mask, causal;
  uint types;  // q | k << 4 | v << 8 | d << 12
  float scale;
  uint mode, n_chunks;
} pc;

shared float qs[kMaxDk];
shared float sc[kChunk];

float neg_inf() { return uintBitsToFloat(0xff800000u); }

// Workspace of (row, chunk): o_c [Dv], then m_c and s_c.
uint slot(uint row, uint c) { return pc.ws_off + (row * pc.n_chunks + c) * (pc.dv + 2u); }

// Keys [j0, j1) of the row's kv head: scores into sc (-inf where masked to -inf).
void scores(uint h, uint t, uint kv, uint j0, uint j1) {
  uint tq = pc.types & 15u, tk = (pc.types >> 4) & 15u;
  uint q0 = pc.q_off + h * pc.q_nb1 + t * pc.q_nb2;
  for (uint i = gl_LocalInvocationID.x; i < pc.dk; i += kThreads) qs[i] = load_q(tq, q0 + i * pc.q_nb0);
  barrier();
  for (uint j = j0 + gl_SubgroupID; j < j1; j += gl_NumSubgroups) {
    uint k0 = pc.k_off + kv * pc.k_nb1 + j * pc.k_nb2;
    // kPer loads of the key per lane at once (indices clamped to Dk, their terms dropped after): a
    // loop of loads bounded by Dk issues them one after another. Summed in index order.
    float part = 0.0;
    for (uint i0 = 0u; i0 < pc.dk; i0 += kPer * gl_SubgroupSize) {
      float kx[kPer];
      [[unroll]] for (uint r = 0u; r < kPer; ++r)
        kx[r] = load_k(tk, k0 + min(i0 + gl_SubgroupInvocationID + r * gl_SubgroupSize, pc.dk - 1u) * pc.k_nb0);
      [[unroll]] for (uint r = 0u; r < kPer; ++r) {
        uint i = i0 + gl_SubgroupInvocationID + r * gl_SubgroupSize;
        if (i < pc.dk) part += qs[i] * kx[r];
      }
    }
    float w = subgroupAdd(part) * pc.scale;
    if (pc.has_mask == 1u) w += m32[pc.m_off + j * pc.m_nb0 + t * pc.m_nb1];
    if (subgroupElect()) sc[j - j0] = w;
  }
  barrier();
}

void chunk(uint row, uint c) {
  uint h = row % pc.n_head, t = row / pc.n_head, kv = h / pc.group, tv = (pc.types >> 8) & 15u;
  int last = pc.causal == 1u ? int(t) + int(pc.n_kv) - int(pc.n_q) : int(pc.n_kv) - 1;
  uint end = uint(clamp(last + 1, 0, int(pc.n_kv)));
  uint j0 = min(c * kChunk, end), j1 = min(j0 + kChunk, end);
  scores(h, t, kv, j0, j1);
  float mx = neg_inf();
  for (uint j = j0; j < j1; ++j) mx = max(mx, sc[j - j0]);
  bool empty = isinf(mx) && mx < 0.0;
  float s = 0.0;
  if (!empty)
    for (uint j = j0; j < j1; ++j) s += exp(sc[j - j0] - mx);
  uint o = slot(row, c);
  for (uint i = gl_LocalInvocationID.x; i < pc.dv; i += kThreads) {
    float acc = 0.0;
    // kBatch keys' v loads at once (keys clamped to the chunk); a zero weight's v is not added
    // (masked keys' cache rows may hold anything), the sum in key order as before.
    for (uint jb = j0; !empty && jb < j1; jb += kBatch) {
      float vb[kBatch];
      [[unroll]] for (uint b = 0u; b < kBatch; ++b)
        vb[b] = load_v(tv, pc.v_off + i * pc.v_nb0 + kv * pc.v_nb1 + min(jb + b, j1 - 1u) * pc.v_nb2);
      [[unroll]] for (uint b = 0u; b < kBatch; ++b) {
        float p = jb + b < j1 ? exp(sc[min(jb + b, j1 - 1u) - j0] - mx) : 0.0;
        if (p != 0.0) acc += p * vb[b];
      }
    }
    ws[o + i] = acc;
  }
  if (gl_LocalInvocationID.x == 0u) {
    ws[o + pc.dv] = mx;
    ws[o + pc.dv + 1u] = s;
  }
}

void combine(uint row) {
  uint h = row % pc.n_head, t = row / pc.n_head, td = (pc.types >> 12) & 15u;
  float mx = neg_inf();
  for (uint c = 0u; c < pc.n_chunks; ++c) mx = max(mx, ws[slot(row, c) + pc.dv]);
  bool empty = isinf(mx) && mx < 0.0;
  float s = 0.0;
  for (uint c = 0u; !empty && c < pc.n_chunks; ++c) s += ws[slot(row, c) + pc.dv + 1u] * exp(ws[slot(row, c) + pc.dv] - mx);
  for (uint i = gl_LocalInvocationID.x; i < pc.dv; i += kThreads) {
    float acc = 0.0;
    for (uint c = 0u; !empty && c < pc.n_chunks; ++c) {
      float e = exp(ws[slot(row, c) + pc.dv] - mx);
      if (e != 0.0) acc += e * ws[slot(row, c) + i];
    }
    store_d(td, pc.d_off + i * pc.d_nb0 + h * pc.d_nb1 + t * pc.d_nb2, empty ? 0.0 : acc / s);
  }
}

void main() {
  uint g = group_index();
  uint rows = pc.n_head * pc.n_q;
  if (pc.mode == 0u) {
    if (g >= rows * pc.n_chunks) return;  // uniform per group
    chunk(g / pc.n_chunks, g % pc.n_chunks);
  } else if (g < rows) {
    combine(g);
  }
}
