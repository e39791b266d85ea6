#version 450
// softmax.comp - SOFTMAX over each row of scores: w = x * scale + mask (F32 [n_kv, n_q], the same
// for every head), causal rows end at column i1 + n_kv - n_q; a row with nothing unmasked is all
// zeros. One work group per row: max, then the sum of exp, reduced in shared memory (f32).
// dst may alias the source: column j is only ever read and written by thread j % 256.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, m)
TENSOR(2, d)

layout(push_constant) uniform Push {
  uvec4 ne;
  uvec4 a_nb;
  uvec4 d_nb;
  uint m_nb0, m_nb1;  // mask strides, elements
  uint a_off, m_off, d_off;
  uint types;   // a | d << 4
  uint has_mask;
  uint causal;
  float scale;
} pc;

shared float red[256];

float score(uint a0, uint m0, uint j) {
  float w = load_a(pc.types & 15u, a0 + j * pc.a_nb.x) * pc.scale;
  if (pc.has_mask == 1u) w += m32[m0 + j * pc.m_nb0];
  return w;
}

void main() {
  uint row = group_index();
  if (row >= pc.ne.y * pc.ne.z * pc.ne.w) return;
  uvec4 r = unravel(row * pc.ne.x, pc.ne);
  uint a0 = pc.a_off + idot(r, pc.a_nb);
  uint d0 = pc.d_off + idot(r, pc.d_nb);
  uint m0 = pc.m_off + r.y * pc.m_nb1;
  uint n = pc.ne.x;
  // Columns [0, end) take part; causal rows stop after column i1 + (n_kv - n_q).
  int last = pc.causal == 1u ? int(r.y) + int(n) - int(pc.ne.y) : int(n) - 1;
  uint end = uint(clamp(last + 1, 0, int(n)));
  uint tid = gl_LocalInvocationID.x;

  float mx = uintBitsToFloat(0xff800000u);
  for (uint j = tid; j < end; j += 256u) mx = max(mx, score(a0, m0, j));
  red[tid] = mx;
  barrier();
  for (uint k = 128u; k > 0u; k >>= 1) {
    if (tid < k) red[tid] = max(red[tid], red[tid + k]);
    barrier();
  }
  mx = red[0];
  barrier();
  if (isinf(mx) && mx < 0.0) end = 0u;
  float s = 0.0;
  for (uint j = tid; j < end; j += 256u) s += exp(score(a0, m0, j) - mx);
  red[tid] = s;
  barrier();
  for (uint k = 128u; k > 0u; k >>= 1) {
    if (tid < k) red[tid] += red[tid + k];
    barrier();
  }
  float inv = 1.0 / red[0];
  // Each thread rewrites only the columns it read, so dst == src is safe.
  for (uint j = tid; j < n; j += 256u)
    store_d((pc.types >> 4) & 15u, d0 + j * pc.d_nb.x, j < end ? exp(score(a0, m0, j) - mx) * inv : 0.0);
}
