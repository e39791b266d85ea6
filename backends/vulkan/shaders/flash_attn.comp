#version 450
// flash_attn.comp - FLASH_ATTN for one query row per work group: q [Dk, H, T] against k [Dk, Hkv, N]
// and v [Dv, Hkv, N] (head h reads kv head h / (H / Hkv)), scores w = q.k * scale + mask (F32
// [N, T]), causal rows end at key t + N - T; softmax, then out = sum_j w_j v_j in key order, as the
// CPU reference. The scores go through the node's workspace (one row of N floats per query row);
// a row with nothing unmasked is all zeros.
#include "common.glsl"

layout(local_size_x = 128) in;

TENSOR(0, q)
TENSOR(1, k)
TENSOR(2, v)
TENSOR(3, m)
TENSOR(4, d)
layout(binding = 5) coherent buffer Scores { float ws[]; };

layout(push_constant) uniform Push {
  uint q_nb0, q_nb1, q_nb2, k_nb0, k_nb1, k_nb2, v_nb0, v_nb1, v_nb2, m_nb0, m_nb1, d_nb0, d_nb1, d_nb2;
  uint q_off, k_off, v_off, m_off, d_off, ws_off;
  uint dk, dv, n_head, n_q, n_kv, group, has_mask, causal;
  uint types;  // q | k << 4 | v << 8 | d << 12
  float scale;
} pc;

shared float red[128];

void main() {
  uint row = group_index();
  if (row >= pc.n_head * pc.n_q) return;
  uint h = row % pc.n_head, t = row / pc.n_head, kv = h / pc.group;
  uint tid = gl_LocalInvocationID.x;
  uint tq = pc.types & 15u, tk = (pc.types >> 4) & 15u, tv = (pc.types >> 8) & 15u, td = (pc.types >> 12) & 15u;
  int last = pc.causal == 1u ? int(t) + int(pc.n_kv) - int(pc.n_q) : int(pc.n_kv) - 1;
  uint end = uint(clamp(last + 1, 0, int(pc.n_kv)));
  uint w0 = pc.ws_off + row * pc.n_kv;
  uint q0 = pc.q_off + h * pc.q_nb1 + t * pc.q_nb2;

  float mx = uintBitsToFloat(0xff800000u);
  for (uint j = tid; j < end; j += 128u) {
    uint k0 = pc.k_off + kv * pc.k_nb1 + j * pc.k_nb2;
    float dot_qk = 0.0;
    for (uint i = 0u; i < pc.dk; ++i) dot_qk += load_q(tq, q0 + i * pc.q_nb0) * load_k(tk, k0 + i * pc.k_nb0);
    float w = dot_qk * pc.scale;
    if (pc.has_mask == 1u) w += m32[pc.m_off + j * pc.m_nb0 + t * pc.m_nb1];
    ws[w0 + j] = w;
    mx = max(mx, w);
  }
  red[tid] = mx;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] = max(red[tid], red[tid + s]);
    barrier();
  }
  mx = red[0];
  barrier();
  if (isinf(mx) && mx < 0.0) end = 0u;
  float sum = 0.0;
  for (uint j = tid; j < end; j += 128u) {
    float e = exp(ws[w0 + j] - mx);
    ws[w0 + j] = e;
    sum += e;
  }
  red[tid] = sum;
  memoryBarrierBuffer();
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  float inv = 1.0 / red[0];
  for (uint i = tid; i < pc.dv; i += 128u) {
    float acc = 0.0;
    for (uint j = 0u; j < end; ++j) {
      float w = ws[w0 + j] * inv;
      if (w != 0.0) acc += w * load_v(tv, pc.v_off + i * pc.v_nb0 + kv * pc.v_nb1 + j * pc.v_nb2);
    }
    store_d(td, pc.d_off + i * pc.d_nb0 + h * pc.d_nb1 + t * pc.d_nb2, acc);
  }
}
