#version 450
// gemm_coop.comp - MUL_MAT for prefill on tensor cores (VK_NV_cooperative_matrix: 16 x 16 x 16
// f16 products, f32 accumulation, subgroups of 32), for F16/BF16 weights and F32 activations whose
// rows are read with 16-byte loads. out[n, m, b2, b3] = sum_k w[k, n, ..] * x[k, m, ..].
// The weights convert to f16 exactly (BF16: for |w| in [2^-17, 65504]; below, within 2^-25).
// Each activation is split into hi = f16(x) and lo = f16(x - hi) and the weights multiply both
// (pc.split = 1), so the product keeps ~22 bits of x: within f32 GEMM rounding of the CPU. With
// pc.split = 0 (Precision::FAST) lo is zero: x rounded to f16.
// A work group computes a kTileN x kTileM output tile, each of its subgroups a kAccN*16 x kAccM*16
// part (kAccN x kAccM accumulators): 128 x 128 with 8 subgroups, or (TILE64, compiled as
// gemm_coop64) 64 x 64 with 4 for products too small to fill the GPU with big tiles. k goes in
// slabs of kTileK: the next slab is read into registers while the current one (f16 in shared
// memory) is multiplied. A value past f16's range (|x| or |w| > 65504) sets a flag and the work
// group computes its tile again in f32 (plain loops): rare, but exact. Results leave through shared
// memory, one 16 x 16 accumulator per subgroup at a time, so any output layout and partial tile
// is written with plain bounds-checked stores.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

#ifdef TILE64
#define kTileN 64u
#define kTileM 64u
#define kThreads 128u
#define kAccN 2u
#else
#define kTileN 128u
#define kTileM 128u
#define kThreads 256u
#define kAccN 4u
#endif
#define kAccM 2u
#define kSubN (kTileN / (16u * kAccN))  // subgroups along n
#define kTileK 32u
#define kLd 40u                                    // f16 per staged row: kTileK + 8 (banks staggered)
#define kWChunks (kTileN * kTileK / 8u / kThreads)  // 16-byte weight chunks (8 k) per invocation
#define kXChunks (kTileM * kTileK / 4u / kThreads)  // 16-byte activation chunks (4 k) per invocation
#define kF16Max 65504.0

layout(local_size_x = kThreads) in;

TENSOR(0, w)
TENSOR(1, x)
TENSOR(2, d)
layout(binding = 0) readonly buffer W4 { uvec4 w4[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };

layout(push_constant) uniform Push {
  uvec4 x_nb;  // elements
  uvec4 d_nb;
  uvec4 w_nb;
  uint K, N, M, B2;  // K: a multiple of 8
  uint r2, r3;
  uint w_off, x_off, d_off;  // w_off a multiple of 8, x_off of 4
  uint types;                // w | x << 4 | d << 8
  uint x_vec;                // gemv.comp's
  uint n_groups;
  uint split;  // 1: x = hi + lo (two products); 0: hi only
} pc;

shared float16_t wsh[kTileN * kLd];   // [n][k]
shared float16_t xhi[kTileM * kLd];   // [m][k]
shared float16_t xlo[kTileM * kLd];   // [m][k]
// One 16 x 16 result per subgroup, [m][n], then the out-of-range flag (kFlag: 0 or 1). The flag
// lives in this array rather than in a shared uint of its own: NVIDIA's driver (580.159) placed
// such a uint before the f16 arrays, which moved them 4 bytes off their 16-byte boundaries, and
// the cooperative-matrix loads, which address 16-byte rows, then read every row two halves early
// (the products of the last two k of each slab went missing). Every shared array here is a whole
// number of 16-byte units.
#define kFlag (kThreads / 32u * 256u)
shared float csh[kFlag + 4u];

// Slab k0's weight chunks and activation chunks of this invocation, as f32 (zero past the edges).
void fetch(uint wrow0, uint xrow0, uint n0, uint m0, uint k0, out vec4 wv[2 * kWChunks], out vec4 xv[kXChunks]) {
  uint tw = pc.types & 15u;
  for (uint i = 0u; i < kWChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = k0 + (c % (kTileK / 8u)) * 8u;
    uvec4 h = uvec4(0u);
    if (k < pc.K && n0 + row < pc.N) h = w4[(wrow0 + row * pc.w_nb.y + k) >> 3];
    if (tw == TYPE_F16) {
      wv[2u * i] = vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
      wv[2u * i + 1u] = vec4(unpackHalf2x16(h.z), unpackHalf2x16(h.w));
    } else {
      wv[2u * i] = uintBitsToFloat(uvec4(h.x << 16, h.x & 0xffff0000u, h.y << 16, h.y & 0xffff0000u));
      wv[2u * i + 1u] = uintBitsToFloat(uvec4(h.z << 16, h.z & 0xffff0000u, h.w << 16, h.w & 0xffff0000u));
    }
  }
  for (uint i = 0u; i < kXChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 4u), k = k0 + (c % (kTileK / 4u)) * 4u;
    xv[i] = k < pc.K && m0 + row < pc.M ? x4[(xrow0 + row * pc.x_nb.y + k) >> 2] : vec4(0.0);
  }
}

// v rounded to f16's precision (nearest even, f16's normal range), computed on its bits: NVIDIA's
// compiler folds float(float16_t(v)) back to v, which made every lo half 0 (EXACT = FAST).
float f16_round(float v) {
  uint u = floatBitsToUint(v);
  return uintBitsToFloat((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
}

// Writes the slab to shared memory as f16 (x as hi and lo); flags values past f16's range.
void stage(vec4 wv[2 * kWChunks], vec4 xv[kXChunks]) {
  bool big = false;
  for (uint i = 0u; i < kWChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = (c % (kTileK / 8u)) * 8u;
    for (uint j = 0u; j < 8u; ++j) {
      float v = wv[2u * i + j / 4u][j % 4u];
      big = big || abs(v) > kF16Max;
      wsh[row * kLd + k + j] = float16_t(v);
    }
  }
  for (uint i = 0u; i < kXChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 4u), k = (c % (kTileK / 4u)) * 4u;
    for (uint j = 0u; j < 4u; ++j) {
      float v = xv[i][j];
      big = big || abs(v) > kF16Max;
      float h = f16_round(v);
      xhi[row * kLd + k + j] = float16_t(h);
      xlo[row * kLd + k + j] = pc.split == 1u ? float16_t(v - h) : float16_t(0.0);
    }
  }
  if (big) csh[kFlag] = 1.0;
}

void store_out(uint n, uint m, uint b2, uint b3, float v) {
  if (n < pc.N && m < pc.M)
    store_d((pc.types >> 8) & 15u, pc.d_off + n * pc.d_nb.x + m * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, v);
}

// The tile in f32, every output by one invocation in k order: for inputs past f16's range.
void tile_in_f32(uint wrow0, uint xrow0, uint n0, uint m0, uint b2, uint b3) {
  uint tw = pc.types & 15u, tx = (pc.types >> 4) & 15u;
  for (uint e = gl_LocalInvocationID.x; e < kTileN * kTileM; e += kThreads) {
    uint n = e % kTileN, m = e / kTileN;
    if (n0 + n >= pc.N || m0 + m >= pc.M) continue;
    float acc = 0.0;
    for (uint k = 0u; k < pc.K; ++k)
      acc += load_w(tw, wrow0 + n * pc.w_nb.y + k) * load_x(tx, xrow0 + m * pc.x_nb.y + k);
    store_out(n0 + n, m0 + m, b2, b3, acc);
  }
}

void main() {
  uint g = group_index();
  if (g >= pc.n_groups) return;  // uniform per group
  uint m_tiles = (pc.M + kTileM - 1u) / kTileM, n_tiles = (pc.N + kTileN - 1u) / kTileN;
  uint m0 = (g % m_tiles) * kTileM, n0 = ((g / m_tiles) % n_tiles) * kTileN;
  uint b = g / (m_tiles * n_tiles), b2 = b % pc.B2, b3 = b / pc.B2;
  uint wrow0 = pc.w_off + n0 * pc.w_nb.y + (b2 / pc.r2) * pc.w_nb.z + (b3 / pc.r3) * pc.w_nb.w;
  uint xrow0 = pc.x_off + m0 * pc.x_nb.y + b2 * pc.x_nb.z + b3 * pc.x_nb.w;
  // This subgroup's part: weight rows sn .. sn + 16 kAccN - 1, activation rows sm .. sm + 16 kAccM - 1.
  uint sn = (gl_SubgroupID % kSubN) * 16u * kAccN, sm = (gl_SubgroupID / kSubN) * 16u * kAccM;
  if (gl_LocalInvocationID.x == 0u) csh[kFlag] = 0.0;
  barrier();  // before any stage() may set it
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c[kAccN][kAccM];
  for (uint i = 0u; i < kAccN; ++i)
    for (uint j = 0u; j < kAccM; ++j) c[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  vec4 wv[2 * kWChunks], xv[kXChunks];
  fetch(wrow0, xrow0, n0, m0, 0u, wv, xv);
  for (uint k0 = 0u; k0 < pc.K; k0 += kTileK) {
    stage(wv, xv);
    barrier();
    if (k0 + kTileK < pc.K) fetch(wrow0, xrow0, n0, m0, k0 + kTileK, wv, xv);
    for (uint kk = 0u; kk < kTileK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[kAccN], bh[kAccM], bl[kAccM];
      for (uint i = 0u; i < kAccN; ++i) coopMatLoadNV(a[i], wsh, (sn + i * 16u) * kLd + kk, kLd, false);
      for (uint j = 0u; j < kAccM; ++j) {
        coopMatLoadNV(bh[j], xhi, (sm + j * 16u) * kLd + kk, kLd, true);
        coopMatLoadNV(bl[j], xlo, (sm + j * 16u) * kLd + kk, kLd, true);
      }
      for (uint i = 0u; i < kAccN; ++i)
        for (uint j = 0u; j < kAccM; ++j) {
          c[i][j] = coopMatMulAddNV(a[i], bl[j], c[i][j]);
          c[i][j] = coopMatMulAddNV(a[i], bh[j], c[i][j]);
        }
    }
    barrier();  // the slab's multiplies are done with shared memory
  }
  if (csh[kFlag] != 0.0) {  // uniform per group (read after the last barrier)
    tile_in_f32(wrow0, xrow0, n0, m0, b2, b3);
    return;
  }
  uint sg = gl_SubgroupID;
  for (uint i = 0u; i < kAccN; ++i)
    for (uint j = 0u; j < kAccM; ++j) {
      coopMatStoreNV(c[i][j], csh, sg * 256u, 16u, true);  // element (n, m) at m * 16 + n
      memoryBarrierShared();
      barrier();
      for (uint e = gl_SubgroupInvocationID; e < 256u; e += gl_SubgroupSize)
        store_out(n0 + sn + i * 16u + e % 16u, m0 + sm + j * 16u + e / 16u, b2, b3, csh[sg * 256u + e]);
      barrier();
    }
}
