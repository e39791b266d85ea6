#version 450
// gemm_coop.comp - gemm.comp on tensor cores (VK_NV_cooperative_matrix), for F16, BF16 and Q8_0
// weights where the device offers 16 x 16 x 16 f16 products with f32 accumulation in subgroups of
// 32. The operands are rounded to f16 by the conversion instruction as they are staged (nearest
// even on NVIDIA; even toward zero, the error stays within what the op harness allows a device for
// these weight types: x rounded to the weight's format). F16 and Q8_0 weights convert exactly
// (Q8_0: within f16 rounding of scale * q); BF16 weights beyond f16's range (|w| > 65504) do not. Each
// work group computes a kTileN x kTileM output tile; each of its 4 subgroups a 32 x 32 quarter
// (2 x 2 accumulators). The result goes through shared memory so any output layout and partial
// tile is written with plain bounds-checked stores.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

#define kTileN 64u
#define kTileM 64u
#define kTileK 32u
#define kThreads 128u
#define kLoads (kTileN * kTileK / kThreads)
#define kLd 40u  // f16 per staged row: kTileK + 8, rows on 16-byte boundaries, banks staggered
#define kLdC 68u  // f32 per result column: kTileN + 4

layout(local_size_x = 128) in;

#include "gemm_fetch.glsl"

shared float16_t wsh[kTileN * kLd];  // [n][k]
shared float16_t xsh[kTileM * kLd];  // [m][k]
shared float csh[kTileM * kLdC];     // [m][n]

void stage(float wv[kLoads], float xv[kLoads]) {
  for (uint i = 0u; i < kLoads; ++i) {
    uint e = gl_LocalInvocationID.x + i * kThreads, row = e / kTileK, k = e % kTileK;
    wsh[row * kLd + k] = float16_t(wv[i]);
    xsh[row * kLd + k] = float16_t(xv[i]);
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
  // This subgroup's quarter: weight rows sn .. sn + 31, activation rows sm .. sm + 31.
  uint sn = (gl_SubgroupID % 2u) * 32u, sm = (gl_SubgroupID / 2u) * 32u;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c[2][2];
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  float wv[kLoads], xv[kLoads];
  fetch(tw, tx, wrow0, xrow0, n0, m0, 0u, wv, xv);
  for (uint k0 = 0u; k0 < pc.K; k0 += kTileK) {
    stage(wv, xv);
    barrier();
    if (k0 + kTileK < pc.K) fetch(tw, tx, wrow0, xrow0, n0, m0, k0 + kTileK, wv, xv);
    for (uint kk = 0u; kk < kTileK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[2], bm[2];
      for (uint i = 0u; i < 2u; ++i) {
        coopMatLoadNV(a[i], wsh, (sn + i * 16u) * kLd + kk, kLd, false);  // [n][k] row-major
        coopMatLoadNV(bm[i], xsh, (sm + i * 16u) * kLd + kk, kLd, true);  // [k][m] column-major
      }
      for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < 2u; ++j) c[i][j] = coopMatMulAddNV(a[i], bm[j], c[i][j]);
    }
    barrier();
  }
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) coopMatStoreNV(c[i][j], csh, (sm + j * 16u) * kLdC + sn + i * 16u, kLdC, true);
  barrier();
  for (uint e = gl_LocalInvocationID.x; e < kTileN * kTileM; e += kThreads) {
    uint n = n0 + e % kTileN, m = m0 + e / kTileN;
    if (n < pc.N && m < pc.M)
      store_d(td, pc.d_off + n * pc.d_nb.x + m * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, csh[(e / kTileN) * kLdC + e % kTileN]);
  }
}
