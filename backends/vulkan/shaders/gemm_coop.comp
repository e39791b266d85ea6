#version 450
// gemm_coop.comp - MUL_MAT for prefill on tensor cores (written against VK_NV_cooperative_matrix
// and run through VK_KHR_cooperative_matrix where the device has it, see src/coop_khr.h: 16 x 8 x
// 16 f16 products, f32 accumulation, subgroups of 32), for F16/BF16 weights and F32 activations
// whose rows are read with 16-byte loads. out[n, m, b2, b3] = sum_k w[k, n, ..] * x[k, m, ..].
// The weights convert to f16 exactly (BF16: for |w| in [2^-17, 65504]; below, within 2^-25).
// Each activation is split into hi = f16(x) and lo = f16(x - hi) and the weights multiply both,
// so the product keeps ~22 bits of x: within f32 GEMM rounding of the CPU. Compiled with FAST
// (gemm_coop_f, gemm_coop64_f: Precision::FAST) x is rounded to f16: one product, no lo.
// A work group computes a kTileN x kTileM output tile, each of its subgroups a kAccN*16 x kAccM*16
// part (kAccN x kAccM accumulators): 128 x 128 with 16 subgroups, or (TILE64, compiled as
// gemm_coop64) 64 x 64 with 4 for products too small to fill the GPU with big tiles. Both give
// each subgroup 32 x 32 (on the H100, 8 subgroups of 64 x 32 took 130 registers against 85 and
// ran 2-4% slower, s15.md). k goes in
// slabs of kTileK, each read, staged in shared memory as f16 and multiplied in turn (reading the
// next slab into registers during the products took 24 more registers and was 6% slower on the
// H100, s15.md). A value past f16's range (|x| or |w| > 65504) sets a flag and the work
// group computes its tile again in f32 (plain loops): rare, but exact. Results leave through shared
// memory, one 16 x 8 accumulator per subgroup at a time, so any output layout and partial tile
// is written with plain bounds-checked stores.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#ifdef TILE64
#define kTileN 64u
#define kTileM 64u
#define kThreads 128u
#else
#define kTileN 128u
#define kTileM 128u
#define kThreads 512u  // device.cpp's coop_basics checks the work group limits (and shared memory)
#endif
#define kAccN 2u
#define kAccM 2u
// The accumulators' indices: i along n (kAccN), j along m (kAccMn = 4).
#define FOR_M(X) X(0) X(1) X(2) X(3)
#define FOR_N(X) X(0) X(1)
#define FOR_NM(X) X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3)
#define kCn 8u  // activation rows per accumulator and B fragment (16 x 8 x 16 products)
#define kAccMn (kAccM * 16u / kCn)  // accumulators along m
#define kSubN (kTileN / (16u * kAccN))  // subgroups along n
// k per slab: as many as 48 KB of shared memory holds (x's lo half takes a third under EXACT); on
// the H100, FAST went from 32 to 64 k a slab +14% in prefill (s15.md).
#ifdef FAST
#define kTileK 64u
#else
#define kTileK 48u
#endif
#define kLd (kTileK + 8u)                 // f16 per staged row (banks staggered)
#define kWTotal (kTileN * kTileK / 8u)    // 16-byte weight chunks (8 k) in a slab
#define kXTotal (kTileM * kTileK / 8u)    // activation chunks of 8 k (two 16-byte loads) in a slab
#define kWChunks ((kWTotal + kThreads - 1u) / kThreads)  // per invocation (the last may be past kWTotal)
#define kXChunks ((kXTotal + kThreads - 1u) / kThreads)
#define kF16Max 65504.0

layout(local_size_x = kThreads) in;

TENSOR(0, w)
TENSOR(1, x)
TENSOR(2, d)
layout(binding = 0) readonly buffer W4 { uvec4 w4[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(binding = 3) buffer Parts { float parts_ws[]; };  // split K: the parts' partial sums

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
  // Split K (products of few weight rows, ops/matmul.cpp): work group g takes part g % parts, k
  // from part * k_len (a multiple of kTileK), and writes its tile's sums to the workspace at
  // ws_off + part * part_stride + ((b3 B2 + b2) M + m) N + n; then mode 1 adds the parts in order
  // into d, one element per invocation. parts = 1: no split, d directly.
  uint k_len, parts, part_stride, ws_off, mode;
} pc;

// 8 f16 per 16-byte word (element k of row r at half r * kLd + k): a chunk of 8 k is one store.
// After the last slab, wsh holds the results on their way out (STORE_C), and past its
// rows, the out-of-range flag (x of wsh[kFlag]: 0 or 1). The flag lives in this array rather
// than in a shared uint of its own: NVIDIA's driver (580.159) placed such a uint before the f16
// arrays, which moved them 4 bytes off their 16-byte boundaries, and the cooperative-matrix loads,
// which address 16-byte rows, then read every row two halves early (the products of the last two
// k of each slab went missing). Every shared array here is a whole number of 16-byte units.
#define kLdV (kLd / 8u)
#define kFlag (kTileN * kLdV)
shared uvec4 wsh[kFlag + 1u];  // [n][k]
shared uvec4 xhi[kTileM * kLdV];  // [m][k]
#ifndef FAST
shared uvec4 xlo[kTileM * kLdV];  // [m][k]
#endif

// Slab k0's raw weight chunks (8 halves each) and activation chunks of this invocation, zero
// past the edges (and for a chunk index past the slab's). A tile inside N and M, on a whole slab
// of K (uniform per group), loads without bounds checks, so every load is in flight at once.
void fetch(uint wrow0, uint xrow0, uint n0, uint m0, uint k0, bool inside, out uvec4 wv[kWChunks], out vec4 xv[2 * kXChunks]) {
  inside = inside && k0 + kTileK <= pc.K;
  [[unroll]] for (uint i = 0u; i < kWChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = k0 + (c % (kTileK / 8u)) * 8u;
    bool live = c < kWTotal;
    if (inside && live) wv[i] = w4[(wrow0 + row * pc.w_nb.y + k) >> 3];
    else wv[i] = live && k < pc.K && n0 + row < pc.N ? w4[(wrow0 + row * pc.w_nb.y + k) >> 3] : uvec4(0u);
  }
  [[unroll]] for (uint i = 0u; i < kXChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = k0 + (c % (kTileK / 8u)) * 8u;
    uint at = (xrow0 + row * pc.x_nb.y + k) >> 2;
    bool live = c < kXTotal;
    if (inside && live) {
      xv[2u * i] = x4[at];
      xv[2u * i + 1u] = x4[at + 1u];
    } else {
      bool in_range = live && k < pc.K && m0 + row < pc.M;  // K is a multiple of 8
      xv[2u * i] = in_range ? x4[at] : vec4(0.0);
      xv[2u * i + 1u] = in_range ? x4[at + 1u] : vec4(0.0);
    }
  }
}

// v rounded to f16's precision (nearest even, f16's normal range), computed on its bits: NVIDIA's
// compiler folds float(float16_t(v)) back to v, which made every lo half 0 (EXACT = FAST).
vec4 f16_round(vec4 v) {
  uvec4 u = floatBitsToUint(v);
  return uintBitsToFloat((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
}

// Two BF16 (the halves of word h) as an f16 pair; exact for |w| in [2^-14, 65504].
uint bf16_pair_to_f16(uint h) { return packHalf2x16(uintBitsToFloat(uvec2(h << 16, h & 0xffff0000u))); }

// Whether any BF16 of the 8 in h is past f16's range (|w| >= 65536, the next BF16 after 65280), or
// is inf or NaN; 1 or 0.
uint bf16_big(uvec4 h) {
  uvec4 a = h & 0x7fff7fffu;
  return uint(any(greaterThanEqual(a, uvec4(0x47800000u)))) | uint(any(greaterThanEqual(a & 0xffffu, uvec4(0x4780u))));
}

// Whether any F16 of the 8 in h is inf or NaN; 1 or 0.
uint f16_big(uvec4 h) {
  uvec4 e = h & 0x7c007c00u;
  return uint(any(equal(e & 0x7c00u, uvec4(0x7c00u)))) | uint(any(equal(e >> 16, uvec4(0x7c00u))));
}

// Writes the slab to shared memory as f16 (x as hi and lo); flags values past f16's range. The
// checks are ORed without short-circuit branches (with them the prefill was 3% slower on the H100).
void stage(uvec4 wv[kWChunks], vec4 xv[2 * kXChunks]) {
  uint big = 0u;
  bool bf16 = (pc.types & 15u) == TYPE_BF16;
  [[unroll]] for (uint i = 0u; i < kWChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = (c % (kTileK / 8u)) * 8u;
    uvec4 h = wv[i];
    if (bf16) {
      big |= bf16_big(h);
      h = uvec4(bf16_pair_to_f16(h.x), bf16_pair_to_f16(h.y), bf16_pair_to_f16(h.z), bf16_pair_to_f16(h.w));
    } else {
      big |= f16_big(h);
    }
    if (c < kWTotal) wsh[row * kLdV + k / 8u] = h;
  }
  [[unroll]] for (uint i = 0u; i < kXChunks; ++i) {
    uint c = gl_LocalInvocationID.x + i * kThreads, row = c / (kTileK / 8u), k = (c % (kTileK / 8u)) * 8u;
    vec4 v0 = xv[2u * i], v1 = xv[2u * i + 1u];
    big |= uint(any(greaterThan(max(abs(v0), abs(v1)), vec4(kF16Max))));
    if (c >= kXTotal) continue;
    vec4 h0 = f16_round(v0), h1 = f16_round(v1);
    xhi[row * kLdV + k / 8u] = uvec4(packHalf2x16(h0.xy), packHalf2x16(h0.zw), packHalf2x16(h1.xy), packHalf2x16(h1.zw));
#ifndef FAST
    vec4 l0 = v0 - h0, l1 = v1 - h1;
    xlo[row * kLdV + k / 8u] = uvec4(packHalf2x16(l0.xy), packHalf2x16(l0.zw), packHalf2x16(l1.xy), packHalf2x16(l1.zw));
#endif
  }
  if (big != 0u) wsh[kFlag].x = 1u;
}

void store_out(uint n, uint m, uint b2, uint b3, float v) {
  if (n < pc.N && m < pc.M)
    store_d((pc.types >> 8) & 15u, pc.d_off + n * pc.d_nb.x + m * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, v);
}

// A result of part `part`: to d, or under split K to the part's rows of the workspace.
void emit(uint n, uint m, uint b2, uint b3, uint part, float v) {
  if (pc.parts == 1u) store_out(n, m, b2, b3, v);
  else if (n < pc.N && m < pc.M) parts_ws[pc.ws_off + part * pc.part_stride + ((b3 * pc.B2 + b2) * pc.M + m) * pc.N + n] = v;
}

// Mode 1 of split K: element e of d is the sum of its parts, in part order.
void sum_parts(uint g) {
  uint e = g * kThreads + gl_LocalInvocationID.x;
  if (e >= pc.part_stride) return;
  float v = 0.0;
  for (uint p = 0u; p < pc.parts; ++p) v += parts_ws[pc.ws_off + p * pc.part_stride + e];
  uint n = e % pc.N, m = (e / pc.N) % pc.M, b = e / (pc.N * pc.M);
  store_out(n, m, b % pc.B2, b / pc.B2, v);
}

// The tile in f32 (its part's k), every output by one invocation in k order: for inputs past
// f16's range.
void tile_in_f32(uint wrow0, uint xrow0, uint n0, uint m0, uint b2, uint b3, uint part, uint k_begin, uint k_end) {
  uint tw = pc.types & 15u, tx = (pc.types >> 4) & 15u;
  for (uint e = gl_LocalInvocationID.x; e < kTileN * kTileM; e += kThreads) {
    uint n = e % kTileN, m = e / kTileN;
    if (n0 + n >= pc.N || m0 + m >= pc.M) continue;
    float acc = 0.0;
    for (uint k = k_begin; k < k_end; ++k)
      acc += load_w(tw, wrow0 + n * pc.w_nb.y + k) * load_x(tx, xrow0 + m * pc.x_nb.y + k);
    emit(n0 + n, m0 + m, b2, b3, part, acc);
  }
}

void main() {
  uint g = group_index();
  if (g >= pc.n_groups) return;  // uniform per group
  if (pc.mode == 1u) {
    sum_parts(g);
    return;
  }
  uint part = g % pc.parts, k_begin = part * pc.k_len, k_end = min(pc.K, k_begin + pc.k_len);
  g /= pc.parts;
  uint m_tiles = (pc.M + kTileM - 1u) / kTileM, n_tiles = (pc.N + kTileN - 1u) / kTileN;
  uint m0 = (g % m_tiles) * kTileM, n0 = ((g / m_tiles) % n_tiles) * kTileN;
  uint b = g / (m_tiles * n_tiles), b2 = b % pc.B2, b3 = b / pc.B2;
  uint wrow0 = pc.w_off + n0 * pc.w_nb.y + (b2 / pc.r2) * pc.w_nb.z + (b3 / pc.r3) * pc.w_nb.w;
  uint xrow0 = pc.x_off + m0 * pc.x_nb.y + b2 * pc.x_nb.z + b3 * pc.x_nb.w;
  // This subgroup's part: weight rows sn .. sn + 16 kAccN - 1, activation rows sm .. sm + 16 kAccM - 1.
  uint sn = (gl_SubgroupID % kSubN) * 16u * kAccN, sm = (gl_SubgroupID / kSubN) * 16u * kAccM;
  if (gl_LocalInvocationID.x == 0u) wsh[kFlag].x = 0u;
  barrier();  // before any stage() may set it
  bool inside = n0 + kTileN <= pc.N && m0 + kTileM <= pc.M && pc.K % kTileK == 0u;
  // Accumulators of kCn activation rows each: the 16 x 8 x 16 products make A, B and the
  // accumulator matrices of three shapes, which coop_khr.h needs to give each its use. Every
  // matrix is a variable of its own (FOR_* below): NVIDIA's driver (580.159) kept arrays of
  // cooperative matrices in local memory, 16 bytes of each invocation per accumulator, even with
  // every index constant, and the products then ran at ~50 TFLOP/s (pipeline statistics, s15.md).
#define DECL_C(i, j) fcoopmatNV<32, gl_ScopeSubgroup, 16, kCn> c##i##j = fcoopmatNV<32, gl_ScopeSubgroup, 16, kCn>(0.0);
  FOR_NM(DECL_C)
  uvec4 wv[kWChunks];
  vec4 xv[2 * kXChunks];
  for (uint k0 = k_begin; k0 < k_end; k0 += kTileK) {
    fetch(wrow0, xrow0, n0, m0, k0, inside, wv, xv);
    stage(wv, xv);
    barrier();
    [[unroll]] for (uint kk = 0u; kk < kTileK; kk += 16u) {
      // Every fragment of the 16-k step is loaded before the first product (on the H100 a load
      // between products costs ~40% of the prefill, s14.md); per accumulator, lo before hi.
#define LOAD_A(i) fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a##i; coopMatLoadNV(a##i, wsh, ((sn + i * 16u) * kLd + kk) / 8u, kLdV, false);
#define LOAD_BH(j) fcoopmatNV<16, gl_ScopeSubgroup, 16, kCn> bh##j; coopMatLoadNV(bh##j, xhi, ((sm + j * kCn) * kLd + kk) / 8u, kLdV, true);
      FOR_N(LOAD_A)
      FOR_M(LOAD_BH)
#ifndef FAST
#define LOAD_BL(j) fcoopmatNV<16, gl_ScopeSubgroup, 16, kCn> bl##j; coopMatLoadNV(bl##j, xlo, ((sm + j * kCn) * kLd + kk) / 8u, kLdV, true);
      FOR_M(LOAD_BL)
#define MMA(i, j) c##i##j = coopMatMulAddNV(a##i, bl##j, c##i##j); c##i##j = coopMatMulAddNV(a##i, bh##j, c##i##j);
#else
#define MMA(i, j) c##i##j = coopMatMulAddNV(a##i, bh##j, c##i##j);
#endif
      FOR_NM(MMA)
    }
    barrier();  // the slab's multiplies are done with shared memory
  }
  if (wsh[kFlag].x != 0u) {  // uniform per group (read after the last barrier)
    tile_in_f32(wrow0, xrow0, n0, m0, b2, b3, part, k_begin, k_end);
    return;
  }
  uint sg = gl_SubgroupID;
  // Accumulator (i, j) through this subgroup's 32 words of wsh (the slabs are done with it);
  // element (n, m) is float m * 16 + n of them.
#define STORE_C(i, j) \
  coopMatStoreNV(c##i##j, wsh, sg * 32u, 4u, true); \
  memoryBarrierShared(); \
  barrier(); \
  for (uint e = gl_SubgroupInvocationID; e < 16u * kCn; e += gl_SubgroupSize) \
    emit(n0 + sn + i * 16u + e % 16u, m0 + sm + j * kCn + e / 16u, b2, b3, part, uintBitsToFloat(wsh[sg * 32u + e / 4u][e % 4u])); \
  barrier();
  FOR_NM(STORE_C)
}
