#version 450
// flash_attn_tile.comp - FLASH_ATTN for prefill rows, tiled: a work group takes kR query rows of one
// kv head (row p of kv head g is token p / group of head g * group + p % group, so the heads that
// share K and V read them once) and walks its keys in blocks of kB with an online softmax: per row a
// running max and sum, the output rescaled when the max grows, divided by the sum at the end. All
// in f32 on CUDA cores; scores are (q.k) * scale + mask as the CPU reference's, but the softmax is
// accumulated block by block, so the result differs from the reference's two passes by rounding
// (the op harness's FLASH_ATTN bound). A row with nothing unmasked is all zeros. dv <= kMaxDv
// (attention.cpp sends wider heads to flash_attn.comp).
//
// Invocation tid owns rows 4 (tid / 16) .. + 3: their scores against keys tid % 16 + 16 c (c < 4)
// and their outputs at columns tid % 16 + 16 q (q < kMaxDv / 16). Every per-invocation array is
// indexed by constants only (fully unrolled), so it stays in registers.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, q)
TENSOR(1, k)
TENSOR(2, v)
TENSOR(3, m)
TENSOR(4, d)

layout(push_constant) uniform Push {
  uint q_nb0, q_nb1, q_nb2, k_nb0, k_nb1, k_nb2, v_nb0, v_nb1, v_nb2, m_nb0, m_nb1, d_nb0, d_nb1, d_nb2;
  uint q_off, k_off, v_off, m_off, d_off, ws_off;
  uint dk, dv, n_head, n_q, n_kv, group, has_mask, causal;
  uint types;  // q | k << 4 | v << 8 | d << 12
  float scale;
} pc;

#define kR 64u       // query rows per work group
#define kB 64u       // keys per block
#define kD 16u       // dk per staged chunk of q and k
#define kVk 16u      // keys per staged slab of v
#define kMaxDv 256u  // output columns
#define kCols (kMaxDv / 16u)
#define kNegInf uintBitsToFloat(0xff800000u)

shared float qs[kR * (kD + 1u)];  // [row][d], rows padded a word against bank conflicts
shared float ks[kB * (kD + 1u)];  // [key][d]
shared float ps[kR * (kB + 1u)];  // [row][key]: scores, then their exponentials
shared float vs[kVk * kMaxDv];    // [key][column]
shared uint vs_odd;               // the slab number (key + 1 of its first) when a value in it is inf or NaN

uint row_token(uint p) { return p / pc.group; }
uint row_head(uint g, uint p) { return g * pc.group + p % pc.group; }
// The last key row p may see (causal), or the last key; negative when it sees none.
int last_key(uint p) { return pc.causal == 1u ? int(row_token(p)) + int(pc.n_kv) - int(pc.n_q) : int(pc.n_kv) - 1; }

// Scores of this invocation's 4 rows x 4 keys of the block at key kb: dot products over dk in
// chunks of kD staged in shared memory, then scaled, masked, and -inf past a row's last key.
void scores(uint g, uint p0, uint n_rows, uint kb, out float s[4][4]) {
  uint tid = gl_LocalInvocationID.x, rg = tid / 16u, cg = tid % 16u;
  uint tq = pc.types & 15u, tk = (pc.types >> 4) & 15u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) s[i][c] = 0.0;
  for (uint d0 = 0u; d0 < pc.dk; d0 += kD) {
    [[unroll]] for (uint e4 = 0u; e4 < 4u; ++e4) {  // kR x kD and kB x kD elements, 4 each
      uint e = tid + e4 * 256u, r = e / kD, dd = d0 + e % kD, p = p0 + r, key = kb + r;
      bool qin = r < n_rows && dd < pc.dk, kin = key < pc.n_kv && dd < pc.dk;
      qs[r * (kD + 1u) + e % kD] =
          qin ? load_q(tq, pc.q_off + dd * pc.q_nb0 + row_head(g, p) * pc.q_nb1 + row_token(p) * pc.q_nb2) : 0.0;
      ks[r * (kD + 1u) + e % kD] = kin ? load_k(tk, pc.k_off + dd * pc.k_nb0 + g * pc.k_nb1 + key * pc.k_nb2) : 0.0;
    }
    barrier();
    [[unroll]] for (uint dd = 0u; dd < kD; ++dd) {
      float qv[4], kv[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) qv[i] = qs[(rg * 4u + i) * (kD + 1u) + dd];
      [[unroll]] for (uint c = 0u; c < 4u; ++c) kv[c] = ks[(cg + 16u * c) * (kD + 1u) + dd];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) s[i][c] += qv[i] * kv[c];
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint r = rg * 4u + i, p = p0 + r;
    int last = r < n_rows ? last_key(p) : -1;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      uint key = kb + cg + 16u * c;
      float w = s[i][c] * pc.scale;
      if (pc.has_mask == 1u && int(key) <= last)
        w += m32[pc.m_off + key * pc.m_nb0 + row_token(p) * pc.m_nb1];
      s[i][c] = int(key) <= last ? w : kNegInf;
    }
  }
}

void main() {
  uint tid = gl_LocalInvocationID.x, rg = tid / 16u, cg = tid % 16u;
  uint rows = pc.n_q * pc.group, blocks = (rows + kR - 1u) / kR;
  uint wg = group_index();
  if (wg >= blocks * (pc.n_head / pc.group)) return;  // uniform per group
  uint g = wg / blocks, p0 = (wg % blocks) * kR, n_rows = min(kR, rows - p0);
  uint end = uint(clamp(last_key(p0 + n_rows - 1u) + 1, 0, int(pc.n_kv)));  // the last row sees the most
  uint tv = (pc.types >> 8) & 15u, td = (pc.types >> 12) & 15u;

  if (tid == 0u) vs_odd = 0u;  // read only after the first block's barriers
  float o[4][kCols], mx[4], sum[4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    mx[i] = kNegInf;
    sum[i] = 0.0;
    [[unroll]] for (uint c = 0u; c < kCols; ++c) o[i][c] = 0.0;
  }
  for (uint kb = 0u; kb < end; kb += kB) {
    float s[4][4];
    scores(g, p0, n_rows, kb, s);
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
      [[unroll]] for (uint c = 0u; c < 4u; ++c) ps[(rg * 4u + i) * (kB + 1u) + cg + 16u * c] = s[i][c];
    barrier();
    float alpha[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {  // the block's row max, then exp(s - max) in place
      uint r = rg * 4u + i;
      float bm = kNegInf;
      for (uint j = 0u; j < kB; ++j) bm = max(bm, ps[r * (kB + 1u) + j]);
      float nm = max(mx[i], bm), base = isinf(nm) ? 0.0 : nm;  // all -inf so far: exponentials 0
      alpha[i] = exp(mx[i] - base);
      mx[i] = nm;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) s[i][c] = exp(s[i][c] - base);
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint c = 0u; c < 4u; ++c) ps[(rg * 4u + i) * (kB + 1u) + cg + 16u * c] = s[i][c];
      [[unroll]] for (uint c = 0u; c < kCols; ++c) o[i][c] *= alpha[i];
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      float bs = 0.0;
      for (uint j = 0u; j < kB; ++j) bs += ps[(rg * 4u + i) * (kB + 1u) + j];
      sum[i] = sum[i] * alpha[i] + bs;
    }
    for (uint j0 = 0u; j0 < kB; j0 += kVk) {  // out += p v, kVk keys of v at a time
      uint slab = kb + j0 + 1u;  // distinct per slab, so the flag needs no reset
      [[unroll]] for (uint e16 = 0u; e16 < kVk * kMaxDv / 256u; ++e16) {
        uint e = tid + e16 * 256u, j = e / kMaxDv, col = e % kMaxDv, key = kb + j0 + j;
        float x = key < end && col < pc.dv ? load_v(tv, pc.v_off + col * pc.v_nb0 + g * pc.v_nb1 + key * pc.v_nb2) : 0.0;
        if ((floatBitsToUint(x) & 0x7f800000u) == 0x7f800000u) vs_odd = slab;
        vs[e] = x;
      }
      barrier();
      // A key of weight 0 adds nothing, as in the CPU reference, even where its value is inf or NaN
      // (0 * NaN is NaN): the slab with such a value (rare, uniform) takes the checked loop.
#define PV_SLAB(TERM)                                                                  \
  [[unroll]] for (uint j = 0u; j < kVk; ++j) {                                         \
    float pv[4];                                                                       \
    [[unroll]] for (uint i = 0u; i < 4u; ++i) pv[i] = ps[(rg * 4u + i) * (kB + 1u) + j0 + j]; \
    [[unroll]] for (uint c = 0u; c < kCols; ++c) {                                     \
      float vv = vs[j * kMaxDv + cg + 16u * c];                                        \
      [[unroll]] for (uint i = 0u; i < 4u; ++i) o[i][c] += TERM;                      \
    }                                                                                  \
  }
      if (vs_odd == slab) {
        PV_SLAB(pv[i] != 0.0 ? pv[i] * vv : 0.0)
      } else {
        PV_SLAB(pv[i] * vv)
      }
      barrier();
    }
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint r = rg * 4u + i, p = p0 + r;
    if (r >= n_rows) continue;
    float inv = sum[i] > 0.0 ? 1.0 / sum[i] : 0.0;
    uint at = pc.d_off + row_head(g, p) * pc.d_nb1 + row_token(p) * pc.d_nb2;
    [[unroll]] for (uint c = 0u; c < kCols; ++c) {
      uint col = cg + 16u * c;
      if (col < pc.dv) store_d(td, at + col * pc.d_nb0, o[i][c] * inv);
    }
  }
}
