#version 450
// norm.comp - RMS_NORM (x / sqrt(mean(x^2) + eps)) and L2_NORM (x / sqrt(sum(x^2) + eps)) per
// row: one work group per row, f32 partial sums reduced in shared memory. The whole row is
// reduced before any element is written, so dst may alias the source.
// Fused (pc.fuse, ops/norm.cpp's norm_fused; every tensor dense F32 of one shape, rows of at most
// 4,096, the weight one row): bit 1 first adds the layer's residual, s = a + b, and normalizes s; bit 0 also writes
// m = d * w (the norm's weight). Every output of the nodes it stands for is written, so nothing
// downstream changes. Element i of a row is read and written by one invocation in every loop,
// which is what lets an output alias an input in place.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, d)
TENSOR(2, w)  // fused: the weight row
TENSOR(3, m)  // fused: d * w
TENSOR(4, b)  // fused add: the second addend
TENSOR(5, s)  // fused add: a + b

layout(push_constant) uniform Push {
  uvec4 ne;    // shape (rows are dims 1..3)
  uvec4 a_nb;  // strides, elements
  uvec4 d_nb;
  uint a_off, d_off;
  uint types;  // a | d << 4
  uint rms;    // 1: RMS_NORM, 0: L2_NORM
  float eps;
  uint fuse;   // bit 0: m = d * w; bit 1: s = a + b first
  uint w_off, m_off, b_off, s_off;
} pc;

shared float partial[256];  // one per subgroup (at most 256 subgroups of one invocation)

// The work group's sum of v: each subgroup's sum, then those sums in subgroup order (one barrier).
float reduce_partials(float v) {
  float sg = subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = sg;
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += partial[i];
  return total;
}

// 1 / sqrt(mean or sum of squares + eps) from a row's sum of squares.
float inv_norm(float total, uint n) { return 1.0 / sqrt((pc.rms == 1u ? total / float(n) : total) + pc.eps); }

#define kCache 16u  // elements per invocation the fused row keeps in registers (ops/norm.cpp's kFusedRow)

// The fused row (every tensor dense F32, at most 256 kCache elements): the same sums and products
// as the nodes one by one. The row and the weight are loaded once into registers, every load
// unconditional (the index clamped to the row, lanes past it zeroed after) so that they are all
// in flight at once: a load under `i < n` is a branch the compiler does not speculate past, and
// the loads then wait for each other (14 us for a 4,096-wide row on the H100).
void fused_row(uint row, uint tid) {
  uint n = pc.ne.x, r0 = row * n;
  bool add = (pc.fuse & 2u) != 0u, mul = (pc.fuse & 1u) != 0u;
  // A row of at most 256 (the GDN gated norm's 128) loads only the first slot: all 16 for 128
  // elements took 192 us a layer at 512 tokens on the H100, 16 loads where one was needed.
  bool wide = n > 256u;
  float v[kCache], u[kCache], wt[kCache];
  [[unroll]] for (uint k = 0u; k < kCache; ++k)
    v[k] = k == 0u || wide ? a32[pc.a_off + r0 + min(tid + 256u * k, n - 1u)] : 0.0;
  if (add) {
    [[unroll]] for (uint k = 0u; k < kCache; ++k)
      u[k] = k == 0u || wide ? b32[pc.b_off + r0 + min(tid + 256u * k, n - 1u)] : 0.0;
  }
  if (mul) {
    [[unroll]] for (uint k = 0u; k < kCache; ++k)
      wt[k] = k == 0u || wide ? w32[pc.w_off + min(tid + 256u * k, n - 1u)] : 0.0;
  }
  float acc = 0.0;
  [[unroll]] for (uint k = 0u; k < kCache; ++k) {
    uint i = tid + 256u * k;
    if (add) v[k] = v[k] + u[k];
    if (i < n) {
      if (add) s32[pc.s_off + r0 + i] = v[k];
      acc += v[k] * v[k];
    }
  }
  float inv = inv_norm(reduce_partials(acc), n);
  [[unroll]] for (uint k = 0u; k < kCache; ++k) {
    uint i = tid + 256u * k;
    if (i >= n) continue;
    float y = v[k] * inv;
    d32[pc.d_off + r0 + i] = y;
    if (mul) m32[pc.m_off + r0 + i] = y * wt[k];
  }
}

void main() {
  uint row = group_index();
  uint n_rows = pc.ne.y * pc.ne.z * pc.ne.w;
  if (row >= n_rows) return;
  uvec4 r = unravel(row * pc.ne.x, pc.ne);
  uint a0 = pc.a_off + idot(r, pc.a_nb);
  uint d0 = pc.d_off + idot(r, pc.d_nb);
  uint ta = pc.types & 15u, td = (pc.types >> 4) & 15u;
  uint tid = gl_LocalInvocationID.x;
  if (pc.fuse != 0u) {
    fused_row(row, tid);
    return;
  }
  float acc = 0.0;
  for (uint i = tid; i < pc.ne.x; i += 256u) {
    float x = load_a(ta, a0 + i * pc.a_nb.x);
    acc += x * x;
  }
  float inv = inv_norm(reduce_partials(acc), pc.ne.x);
  for (uint i = tid; i < pc.ne.x; i += 256u) store_d(td, d0 + i * pc.d_nb.x, load_a(ta, a0 + i * pc.a_nb.x) * inv);
}
