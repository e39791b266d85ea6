#version 450
// matmul.comp - MUL_MAT (out[n, m, b2, b3] = sum_k w[k, n, b2 / r2, b3 / r3] * x[k, m, b2, b3])
// and MUL_MAT_ID (out[n, u, t] = sum_k experts[k, n, ids[u, t]] * x[k, u % X1, t]), f32
// accumulation. A work group of kRowsPerGroup slices of kLanes threads; each slice takes one
// weight row and a tile of up to kTile activation rows (the weight row is read once per tile: a
// GEMV for the 1..K+1 rows of decode and verify); lanes stride over k, partial sums reduced in
// shared memory. Weights F32/F16/BF16, or a quantized type of quants.glsl (w_nb in 16-bit words,
// dim 0 in blocks), decoded element by element as the reference dequantizer computes it.
#include "common.glsl"

#define kTile 8u
#define kLanes 32u
#define kRowsPerGroup 4u

layout(local_size_x = 128) in;

TENSOR(0, w)
TENSOR(1, x)
TENSOR(2, d)
TENSOR(3, ids)
#define QARR w16
#include "quants.glsl"

layout(push_constant) uniform Push {
  uvec4 x_nb;   // elements
  uvec4 d_nb;
  uvec4 w_nb;   // elements, or 16-bit words for a quantized type (w_nb.x unused)
  uint K, N, M, B2;  // M: activation rows per batch (MUL_MAT_ID: ids per token U); B2: x batches
  uint r2, r3;   // x batches per weight batch
  uint w_off, x_off, d_off, ids_off;
  uint types;    // w | x << 4 | d << 8
  uint tile;     // activation rows per group (1 for MUL_MAT_ID)
  uint id_mode;  // 1: MUL_MAT_ID (ids_nb0, ids_nb1 in ids_nb, x1 = rows of x per token)
  uint ids_nb0, ids_nb1, x1, n_experts;
  uint n_groups;
} pc;

shared float red[kRowsPerGroup][kTile][kLanes];

// Element k of the weight row starting at `base`.
float weight(uint tw, uint base, uint k) {
  if (tw == TYPE_Q8_0) return Q8_0_AT(w16, base + (k >> 5) * 17u, k & 31u);
  if (!is_quant(tw)) return load_w(tw, base + k * pc.w_nb.x);
  uint qe = quant_elems(tw);
  return quant_at(tw, base + (k / qe) * quant_words(tw), k % qe);
}

void main() {
  uint g = group_index();
  if (g >= pc.n_groups) return;
  uint slice = gl_LocalInvocationID.x / kLanes, tid = gl_LocalInvocationID.x % kLanes;
  uint n_tiles = (pc.M + pc.tile - 1u) / pc.tile;
  uint row_groups = (pc.N + kRowsPerGroup - 1u) / kRowsPerGroup;
  uint n = (g % row_groups) * kRowsPerGroup + slice;
  uint rest = g / row_groups;
  uint m0 = (rest % n_tiles) * pc.tile;
  uint b = rest / n_tiles;
  uint b2 = b % pc.B2, b3 = b / pc.B2;
  uint tw = pc.types & 15u, tx = (pc.types >> 4) & 15u, td = (pc.types >> 8) & 15u;
  uint wbase, xrow0;
  bool live = n < pc.N;  // slices past the last row still take part in the barriers
  if (pc.id_mode == 1u) {
    int e = idsi[pc.ids_off + m0 * pc.ids_nb0 + b2 * pc.ids_nb1];
    if (e < 0 || uint(e) >= pc.n_experts) return;  // the CPU reference aborts on it (uniform per group)
    wbase = pc.w_off + n * pc.w_nb.y + uint(e) * pc.w_nb.z;
    xrow0 = pc.x_off + (m0 % pc.x1) * pc.x_nb.y + b2 * pc.x_nb.z;
  } else {
    wbase = pc.w_off + n * pc.w_nb.y + (b2 / pc.r2) * pc.w_nb.z + (b3 / pc.r3) * pc.w_nb.w;
    xrow0 = pc.x_off + m0 * pc.x_nb.y + b2 * pc.x_nb.z + b3 * pc.x_nb.w;
  }
  uint rows = min(pc.tile, pc.M - m0);
  float acc[kTile];
  for (uint r = 0u; r < kTile; ++r) acc[r] = 0.0;
  for (uint k = tid; live && k < pc.K; k += kLanes) {
    float wv = weight(tw, wbase, k);
    uint xk = xrow0 + k * pc.x_nb.x;
    for (uint r = 0u; r < rows; ++r) acc[r] += wv * load_x(tx, xk + r * pc.x_nb.y);
  }
  for (uint r = 0u; r < kTile; ++r) red[slice][r][tid] = acc[r];
  barrier();
  for (uint s = kLanes / 2u; s > 0u; s >>= 1) {
    if (tid < s)
      for (uint r = 0u; r < rows; ++r) red[slice][r][tid] += red[slice][r][tid + s];
    barrier();
  }
  if (live && tid < rows) {
    uint m = m0 + tid;
    store_d(td, pc.d_off + n * pc.d_nb.x + m * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, red[slice][tid][0]);
  }
}
