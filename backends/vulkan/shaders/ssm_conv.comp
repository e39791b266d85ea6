#version 450
// ssm_conv.comp - SSM_CONV: the depthwise causal convolution of the GDN layers,
// dst[c, t] = sum_j w[j, c] * xs[c, t + j] for xs [C, T + K - 1], w [K, C], dst [C, T]; one thread
// per output, taps summed in order in f32 (as the CPU reference).
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, x)
TENSOR(1, w)
TENSOR(2, d)

layout(push_constant) uniform Push {
  uvec4 x_nb;
  uvec4 w_nb;
  uvec4 d_nb;
  uint x_off, w_off, d_off;
  uint types;  // x | w << 4 | d << 8
  uint channels, taps, n;
} pc;

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uint c = idx % pc.channels, t = idx / pc.channels;
  uint tx = pc.types & 15u, tw = (pc.types >> 4) & 15u;
  float acc = 0.0;
  for (uint j = 0u; j < pc.taps; ++j)
    acc += load_w(tw, pc.w_off + j * pc.w_nb.x + c * pc.w_nb.y) * load_x(tx, pc.x_off + c * pc.x_nb.x + (t + j) * pc.x_nb.y);
  store_d((pc.types >> 8) & 15u, pc.d_off + c * pc.d_nb.x + t * pc.d_nb.y, acc);
}
