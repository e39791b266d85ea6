#version 450
// norm.comp - RMS_NORM (x / sqrt(mean(x^2) + eps)) and L2_NORM (x / sqrt(sum(x^2) + eps)) per
// row: one work group per row, f32 partial sums reduced in shared memory. The whole row is
// reduced before any element is written, so dst may alias the source.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, d)

layout(push_constant) uniform Push {
  uvec4 ne;    // shape (rows are dims 1..3)
  uvec4 a_nb;  // strides, elements
  uvec4 d_nb;
  uint a_off, d_off;
  uint types;  // a | d << 4
  uint rms;    // 1: RMS_NORM, 0: L2_NORM
  float eps;
} pc;

shared float partial[256];

void main() {
  uint row = group_index();
  uint n_rows = pc.ne.y * pc.ne.z * pc.ne.w;
  if (row >= n_rows) return;
  uvec4 r = unravel(row * pc.ne.x, pc.ne);
  uint a0 = pc.a_off + idot(r, pc.a_nb);
  uint d0 = pc.d_off + idot(r, pc.d_nb);
  uint ta = pc.types & 15u, td = (pc.types >> 4) & 15u;
  uint tid = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint i = tid; i < pc.ne.x; i += 256u) {
    float x = load_a(ta, a0 + i * pc.a_nb.x);
    s += x * x;
  }
  partial[tid] = s;
  barrier();
  for (uint k = 128u; k > 0u; k >>= 1) {
    if (tid < k) partial[tid] += partial[tid + k];
    barrier();
  }
  float denom = pc.rms == 1u ? partial[0] / float(pc.ne.x) : partial[0];
  float inv = 1.0 / sqrt(denom + pc.eps);
  for (uint i = tid; i < pc.ne.x; i += 256u) store_d(td, d0 + i * pc.d_nb.x, load_a(ta, a0 + i * pc.a_nb.x) * inv);
}
