#version 450
// rope.comp - ROPE: rotates the first n_dims of every row of x [D, H, T] by the angles
// pos[t] * freq_scale * inv_freq[i] (NEOX: pairs (i, i + n_dims/2); NORMAL: (2i, 2i+1)),
// and copies the other D - n_dims. One thread per pair or copied element. inv_freq[i] =
// base^(-2i/n_dims) comes from the host (computed in double: f32 pow is off by ~100 ulp at
// base 1e7); angles are f32 (the harness bounds the error at far positions) and reduced to [-pi, pi] before cos/sin, whose
// accuracy Vulkan only specifies there.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, x)
TENSOR(1, p)
TENSOR(2, d)
layout(binding = 3) readonly buffer InvFreq { float inv_freq[]; };

layout(push_constant) uniform Push {
  uvec4 ne;
  uvec4 x_nb;
  uvec4 d_nb;
  uvec4 p_ne;
  uvec4 p_nb;
  uint x_off, p_off, d_off;
  uint types;   // x | d << 4
  uint n_dims;
  uint neox;
  uint n;       // threads: rows * (n_dims / 2 + D - n_dims)
  uint f_off;   // inv_freq's first element
  float freq_scale;
} pc;

// theta - 2 pi k with 2 pi split in two (6.28125 has 8 significant bits: k * it is exact).
float reduce_angle(float theta) {
  float k = roundEven(theta * 0.15915494309189535);
  return (theta - k * 6.28125) - k * 1.9353071795864769e-3;
}

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uint half_dims = pc.n_dims / 2u;
  uint per_row = half_dims + pc.ne.x - pc.n_dims;
  uint row = idx / per_row, j = idx % per_row;
  uvec4 r = unravel(row * pc.ne.x, pc.ne);
  uint x0 = pc.x_off + idot(r, pc.x_nb), d0 = pc.d_off + idot(r, pc.d_nb);
  uint tx = pc.types & 15u, td = (pc.types >> 4) & 15u;
  if (j >= half_dims) {  // a dimension past n_dims: copied
    uint i = pc.n_dims + (j - half_dims);
    store_d(td, d0 + i * pc.d_nb.x, load_x(tx, x0 + i * pc.x_nb.x));
    return;
  }
  uint i0 = pc.neox == 1u ? j : 2u * j;
  uint i1 = pc.neox == 1u ? j + half_dims : 2u * j + 1u;
  uvec4 pt = unravel(r.z, pc.p_ne);
  float position = float(pi[pc.p_off + idot(pt, pc.p_nb)]);
  float theta = position * pc.freq_scale * inv_freq[pc.f_off + j];
  float a = reduce_angle(theta);
  float c = cos(a), s = sin(a);
  float v0 = load_x(tx, x0 + i0 * pc.x_nb.x), v1 = load_x(tx, x0 + i1 * pc.x_nb.x);
  store_d(td, d0 + i0 * pc.d_nb.x, v0 * c - v1 * s);
  store_d(td, d0 + i1 * pc.d_nb.x, v1 * c + v0 * s);
}
