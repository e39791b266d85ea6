#version 450
// gemm.comp - MUL_MAT for prefill (more than 8 activation rows): out[n, m, b2, b3] =
// sum_k w[k, n, b2 / r2, b3 / r3] * x[k, m, b2, b3], f32 accumulation in k order. Each work
// group computes a kTileN x kTileM output tile: kTileK columns of k of both operands are decoded to
// f32 into shared memory (F32/F16/BF16 or Q8_0 weights, any element strides), then each of the
// kThreads invocations accumulates an 8 x 4 register tile from them. The next k slab is read into
// registers while the current one is multiplied, so global latency overlaps the arithmetic.
// Neighbouring work groups share a weight tile (m tiles vary fastest) so it is read once from DRAM.
#include "common.glsl"

#define kTileN 64u   // weight rows per work group
#define kTileM 64u   // activation rows per work group
#define kTileK 32u   // k per shared-memory slab
#define kThreads 128u
#define kLoads (kTileN * kTileK / kThreads)  // elements of each operand one invocation stages
#define kStride (kTileN / 4u + 1u)           // vec4s per k row of a slab (+1 against bank conflicts)

layout(local_size_x = 128) in;

#include "gemm_fetch.glsl"

// Slab [k][row] of each operand, rows grouped by 4 so the multiply reads vec4s.
shared vec4 ws[kTileK * kStride];
shared vec4 xs[kTileK * kStride];

void stage(float wv[kLoads], float xv[kLoads]) {
  for (uint i = 0u; i < kLoads; ++i) {
    uint e = gl_LocalInvocationID.x + i * kThreads, row = e / kTileK, k = e % kTileK;
    ws[k * kStride + row / 4u][row % 4u] = wv[i];
    xs[k * kStride + row / 4u][row % 4u] = xv[i];
  }
}

void main() {
  uint g = group_index();
  if (g >= pc.n_groups) return;  // uniform per group
  uint m_tiles = (pc.M + kTileM - 1u) / kTileM, n_tiles = (pc.N + kTileN - 1u) / kTileN;
  uint m0 = (g % m_tiles) * kTileM, n0 = ((g / m_tiles) % n_tiles) * kTileN;
  uint b = g / (m_tiles * n_tiles), b2 = b % pc.B2, b3 = b / pc.B2;
  uint tw = pc.types & 15u, tx = (pc.types >> 4) & 15u, td = (pc.types >> 8) & 15u;
  uint wrow0 = pc.w_off + n0 * pc.w_nb.y + (b2 / pc.r2) * pc.w_nb.z + (b3 / pc.r3) * pc.w_nb.w;
  uint xrow0 = pc.x_off + m0 * pc.x_nb.y + b2 * pc.x_nb.z + b3 * pc.x_nb.w;
  // This invocation's rows: weight rows tn*4 .. +3 and 32 + tn*4 .. +3, activation rows tm*4 .. +3.
  uint tn = gl_LocalInvocationID.x % 8u, tm = gl_LocalInvocationID.x / 8u;
  vec4 acc[8];
  for (uint i = 0u; i < 8u; ++i) acc[i] = vec4(0.0);
  float wv[kLoads], xv[kLoads];
  fetch(tw, tx, wrow0, xrow0, n0, m0, 0u, wv, xv);
  for (uint k0 = 0u; k0 < pc.K; k0 += kTileK) {
    stage(wv, xv);
    barrier();
    if (k0 + kTileK < pc.K) fetch(tw, tx, wrow0, xrow0, n0, m0, k0 + kTileK, wv, xv);
    for (uint k = 0u; k < kTileK; ++k) {
      vec4 a = ws[k * kStride + tn], c = ws[k * kStride + 8u + tn], xq = xs[k * kStride + tm];
      acc[0] += a.x * xq;
      acc[1] += a.y * xq;
      acc[2] += a.z * xq;
      acc[3] += a.w * xq;
      acc[4] += c.x * xq;
      acc[5] += c.y * xq;
      acc[6] += c.z * xq;
      acc[7] += c.w * xq;
    }
    barrier();
  }
  for (uint i = 0u; i < 8u; ++i) {
    uint n = n0 + (i < 4u ? tn * 4u + i : 32u + tn * 4u + i - 4u);
    for (uint j = 0u; j < 4u; ++j) {
      uint m = m0 + tm * 4u + j;
      if (n < pc.N && m < pc.M)
        store_d(td, pc.d_off + n * pc.d_nb.x + m * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, acc[i][j]);
    }
  }
}
