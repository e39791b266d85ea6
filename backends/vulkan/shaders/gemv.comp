#version 450
// gemv.comp - MUL_MAT for decode and verify (1..kMaxRows activation rows): out[n, m, b2, b3] =
// sum_k w[k, n, b2 / r2, b3 / r3] * x[k, m, b2, b3], f32 accumulation. Decode reads every weight
// once per token, so the bound is memory bandwidth: a work group takes kRows consecutive weight
// rows (1, or 2 in the variant `gemv2`) and reads them in chunks of 8 elements with one
// 16-byte load per invocation and row (consecutive invocations, consecutive chunks); each
// activation chunk it loads serves its kRows weight rows. It reduces with subgroupAdd and one
// shared-memory step across subgroups.
// Weights F32/F16/BF16 with rows of 8-element chunks on 16-byte boundaries, or Q8_0 (a chunk is
// a quarter block: the f16 scale word and 4 words of int8). Output (n, m) depends only on weight
// row n and activation row m (the chunk order and the reduction are the same for any row count
// and either variant), so a product of M rows gives the bits of M products of one row.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

// Variants (CMakeLists.txt): ROWS2 (two weight rows per work group); DECODE (one activation row:
// the decode step's shape, which frees the registers of the other seven); WBF16 / WF16 (weights of
// that type only: no per-type branches, and each chunk kept as its raw 16 bytes until the dot).
// The variants read the same values and sum them in the same order, so they give the same bits.
// Measured on the H100, 9B BF16 tg32 at 2 rows: 62 tok/s generic; 72 with the type fixed; 77 with
// it fixed and raw chunks; 87 with it fixed and one activation row.
#define kThreads 128u
#ifdef DECODE
#define kMaxRows 1u
#else
#define kMaxRows 8u
#endif
#define kChunk 8u
#if defined(WBF16) || defined(WF16)
#define RAW_CHUNKS
#endif
// kRows x kUnroll = 4 weight chunks in flight per invocation. Measured on the H100, 9B BF16 tg32:
// 1 row 50.0 tok/s, 2 rows 60.1-61.9; 4 rows 40.8 with 2 chunks each, 40.1 with 1. At 2 rows:
// 256 invocations 51.9, 4 chunks each 45.8 (64 invocations: 44.8), 1 chunk 61.3, 64 x 2 62.1.
#if defined(ROWS2)
#define kRows 2u
#define kUnroll 2u
#else
#define kRows 1u
#define kUnroll 4u
#endif

layout(local_size_x = 128) in;

TENSOR(0, w)
TENSOR(1, x)
TENSOR(2, d)
layout(binding = 0) readonly buffer W4 { uvec4 w4[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };

layout(push_constant) uniform Push {
  uvec4 x_nb;  // elements
  uvec4 d_nb;
  uvec4 w_nb;  // elements, or 16-bit words for Q8_0 (w_nb.x unused)
  uint K, N, M, B2;  // K: a multiple of kChunk; M <= kMaxRows
  uint r2, r3;       // x batches per weight batch
  uint w_off, x_off, d_off;
  uint types;   // w | x << 4 | d << 8
  uint x_vec;   // 1: x is F32 with rows of whole vec4s on 16-byte boundaries (read through x4)
  uint n_groups;
} pc;

shared float red[kMaxRows * kRows][kThreads];  // [output][subgroup]: room for subgroups of one

// The kChunk weights of chunk c of the row starting at element (or Q8_0 word) `base`.
// Elements 0..3 and 4..7 of a raw 16-byte chunk of the variant's 16-bit type.
vec4 raw_lo(uvec4 h) {
#ifdef WF16
  return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
#else
  return uintBitsToFloat(uvec4(h.x << 16, h.x & 0xffff0000u, h.y << 16, h.y & 0xffff0000u));
#endif
}
vec4 raw_hi(uvec4 h) {
#ifdef WF16
  return vec4(unpackHalf2x16(h.z), unpackHalf2x16(h.w));
#else
  return uintBitsToFloat(uvec4(h.z << 16, h.z & 0xffff0000u, h.w << 16, h.w & 0xffff0000u));
#endif
}

void weights(uint tw, uint base, uint c, out vec4 lo, out vec4 hi) {
#ifdef RAW_CHUNKS
  uvec4 raw = w4[(base >> 3) + c];
  lo = raw_lo(raw);
  hi = raw_hi(raw);
  return;
#endif
  if (tw == TYPE_Q8_0) {
    uint blk = base + (c >> 2) * 17u, q = blk + 1u + (c & 3u) * 4u;
    float scale = f16_to_f32(uint(w16[blk]));
    uvec4 b = uvec4(w16[q], w16[q + 1u], w16[q + 2u], w16[q + 3u]);
    // Sign-extend the low and high byte of each 16-bit word.
    vec4 even = vec4(ivec4(b << 24) >> 24), odd = vec4(ivec4(b << 16) >> 24);
    lo = scale * vec4(even.x, odd.x, even.y, odd.y);
    hi = scale * vec4(even.z, odd.z, even.w, odd.w);
    return;
  }
  if (tw == TYPE_F32) {
    uint i = (base >> 2) + c * 2u;
    lo = uintBitsToFloat(w4[i]);
    hi = uintBitsToFloat(w4[i + 1u]);
    return;
  }
  uvec4 h = w4[(base >> 3) + c];
  if (tw == TYPE_F16) {
    lo = vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
    hi = vec4(unpackHalf2x16(h.z), unpackHalf2x16(h.w));
  } else {
    lo = uintBitsToFloat(uvec4(h.x << 16, h.x & 0xffff0000u, h.y << 16, h.y & 0xffff0000u));
    hi = uintBitsToFloat(uvec4(h.z << 16, h.z & 0xffff0000u, h.w << 16, h.w & 0xffff0000u));
  }
}

// Activations k .. k + 7 of the row starting at element `row`.
void activations(uint tx, uint row, uint k, out vec4 lo, out vec4 hi) {
  if (pc.x_vec == 1u) {
    lo = x4[(row + k) >> 2];
    hi = x4[((row + k) >> 2) + 1u];
    return;
  }
  uint i = row + k * pc.x_nb.x, s = pc.x_nb.x;
  lo = vec4(load_x(tx, i), load_x(tx, i + s), load_x(tx, i + 2u * s), load_x(tx, i + 3u * s));
  hi = vec4(load_x(tx, i + 4u * s), load_x(tx, i + 5u * s), load_x(tx, i + 6u * s), load_x(tx, i + 7u * s));
}

void main() {
  uint g = group_index();
  if (g >= pc.n_groups) return;  // uniform per group
  uint tid = gl_LocalInvocationID.x;
  uint n_blocks = (pc.N + kRows - 1u) / kRows;
  uint n0 = (g % n_blocks) * kRows, b = g / n_blocks;
  uint b2 = b % pc.B2, b3 = b / pc.B2;
  uint tw = pc.types & 15u, tx = (pc.types >> 4) & 15u, td = (pc.types >> 8) & 15u;
  uint wbatch = pc.w_off + (b2 / pc.r2) * pc.w_nb.z + (b3 / pc.r3) * pc.w_nb.w;
  uint wbase[kRows];  // rows past N read the last row and store nothing
  for (uint j = 0u; j < kRows; ++j) wbase[j] = wbatch + min(n0 + j, pc.N - 1u) * pc.w_nb.y;
  uint xrow0 = pc.x_off + b2 * pc.x_nb.z + b3 * pc.x_nb.w;
  // Loops over rows run to the constants kMaxRows and kRows (and test r < M) so acc stays in
  // registers. Each output then has its own unrolled copy of the code: `precise` keeps the
  // compiler from fusing multiplies and adds differently in different copies (every output must
  // give the bits of output 0 of a one-row product).
  precise float acc[kMaxRows * kRows];
  for (uint i = 0u; i < kMaxRows * kRows; ++i) acc[i] = 0.0;
  uint chunks = pc.K / kChunk, c = tid;
  // kUnroll chunks per step, all loads issued before the arithmetic that waits for them (enough
  // bytes in flight per SM to cover DRAM latency). The sums still go chunk by chunk in order.
  for (; c + (kUnroll - 1u) * kThreads < chunks; c += kUnroll * kThreads) {
#ifdef RAW_CHUNKS
    uvec4 wraw[kUnroll * kRows];
    for (uint u = 0u; u < kUnroll; ++u)
      for (uint j = 0u; j < kRows; ++j) wraw[u * kRows + j] = w4[(wbase[j] >> 3) + c + u * kThreads];
#else
    vec4 wlo[kUnroll * kRows], whi[kUnroll * kRows];
    for (uint u = 0u; u < kUnroll; ++u)
      for (uint j = 0u; j < kRows; ++j) weights(tw, wbase[j], c + u * kThreads, wlo[u * kRows + j], whi[u * kRows + j]);
#endif
    for (uint r = 0u; r < kMaxRows; ++r) {
      if (r >= pc.M) break;
      for (uint u = 0u; u < kUnroll; ++u) {
        vec4 xlo, xhi;
        activations(tx, xrow0 + r * pc.x_nb.y, (c + u * kThreads) * kChunk, xlo, xhi);
        for (uint j = 0u; j < kRows; ++j) {
#ifdef RAW_CHUNKS
          vec4 lo = raw_lo(wraw[u * kRows + j]), hi = raw_hi(wraw[u * kRows + j]);
#else
          vec4 lo = wlo[u * kRows + j], hi = whi[u * kRows + j];
#endif
          acc[r * kRows + j] += dot(lo, xlo) + dot(hi, xhi);
        }
      }
    }
  }
  for (; c < chunks; c += kThreads) {
    vec4 wlo[kRows], whi[kRows];
    for (uint j = 0u; j < kRows; ++j) weights(tw, wbase[j], c, wlo[j], whi[j]);
    for (uint r = 0u; r < kMaxRows; ++r) {
      if (r >= pc.M) break;
      vec4 xlo, xhi;
      activations(tx, xrow0 + r * pc.x_nb.y, c * kChunk, xlo, xhi);
      for (uint j = 0u; j < kRows; ++j) acc[r * kRows + j] += dot(wlo[j], xlo) + dot(whi[j], xhi);
    }
  }
  for (uint r = 0u; r < kMaxRows; ++r) {
    if (r >= pc.M) break;  // uniform: every invocation of the subgroup takes part
    for (uint j = 0u; j < kRows; ++j) {
      float s = subgroupAdd(acc[r * kRows + j]);
      if (subgroupElect()) red[r * kRows + j][gl_SubgroupID] = s;
    }
  }
  barrier();
  // Invocation t < M kRows stores output (row n0 + t % kRows, activation row t / kRows).
  uint j = tid % kRows, r = tid / kRows;
  if (r < pc.M && n0 + j < pc.N) {
    float s = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) s += red[tid][i];
    store_d(td, pc.d_off + (n0 + j) * pc.d_nb.x + r * pc.d_nb.y + b2 * pc.d_nb.z + b3 * pc.d_nb.w, s);
  }
}
