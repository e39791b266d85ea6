#version 450
// reduce.comp - per-row ARGMAX, TOP_K and SUM_ROWS; one work group per row, reduced in shared
// memory. Ties go to the lower index and NaN never wins (ARGMAX skips it, TOP_K ranks it as
// -inf), as in the CPU reference, so every backend picks the same indices. TOP_K runs k rounds,
// each taking the best entry ranked after the previous pick (value descending, index ascending).
// A long ARGMAX row (the vocabulary) goes in two dispatches: mode 3, one work group per segment
// of pc.seg entries, each segment's best (value, index) to the workspace; mode 4, one work group
// per row, the best of its segments (the same pick: ranking is exact).
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, d)
layout(binding = 2) buffer Ws { float wsv[]; };
layout(binding = 2) buffer WsI { uint wsi[]; };

layout(push_constant) uniform Push {
  uvec4 ne;
  uvec4 a_nb;
  uvec4 d_nb;
  uint a_off, d_off;
  uint types;  // a | d << 4
  uint mode;   // 0 ARGMAX, 1 TOP_K, 2 SUM_ROWS, 3 and 4 ARGMAX in segments (above)
  uint k;
  uint seg, n_seg, ws_off;  // modes 3 and 4: entries per segment, segments per row, workspace
} pc;

shared float sv[256];
shared uint si_[256];

void reduce_best(uint tid);

// Whether (v, i) ranks before (w, j): larger value, then lower index.
bool before(float v, uint i, float w, uint j) { return v > w || (v == w && i < j); }

// The best (value, index) over entries [j0, j1) of the row among entries ranked after (pv, pi)
// (all when first), in sv[0], si_[0] (0xffffffff: none).
void best(uint a0, uint tid, bool first, float pv, uint pi, bool nan_low, uint j0, uint j1) {
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = 0u;
  bool found = false;
  for (uint j = j0 + tid; j < j1; j += 256u) {
    float v = load_a(pc.types & 15u, a0 + j * pc.a_nb.x);
    if (isnan(v)) {
      if (!nan_low) continue;
      v = uintBitsToFloat(0xff800000u);
    }
    if (!nan_low && isinf(v) && v < 0.0) continue;  // ARGMAX: only a value above -inf replaces index 0
    if (!first && !before(pv, pi, v, j)) continue;
    if (!found || before(v, j, bv, bi)) {
      bv = v;
      bi = j;
      found = true;
    }
  }
  sv[tid] = bv;
  si_[tid] = found ? bi : 0xffffffffu;
  reduce_best(tid);
}

// sv[0], si_[0] = the best of the 256 (value, index) pairs in sv, si_.
void reduce_best(uint tid) {
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (tid < s) {
      uint j = si_[tid + s];
      bool take = j != 0xffffffffu && (si_[tid] == 0xffffffffu || before(sv[tid + s], j, sv[tid], si_[tid]));
      if (take) {
        sv[tid] = sv[tid + s];
        si_[tid] = j;
      }
    }
    barrier();
  }
}

// Mode 3: group g is segment g % n_seg of row g / n_seg; mode 4: group g is row g.
void argmax_segments(uint g, uvec4 r, uint a0, uint tid) {
  if (pc.mode == 3u) {
    uint sgm = g % pc.n_seg, j0 = sgm * pc.seg;
    best(a0, tid, true, 0.0, 0u, false, j0, min(j0 + pc.seg, pc.ne.x));
    if (tid == 0u) {
      wsv[pc.ws_off + 2u * g] = sv[0];
      wsi[pc.ws_off + 2u * g + 1u] = si_[0];
    }
    return;
  }
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = 0xffffffffu;
  for (uint i = tid; i < pc.n_seg; i += 256u) {
    float v = wsv[pc.ws_off + 2u * (g * pc.n_seg + i)];
    uint j = wsi[pc.ws_off + 2u * (g * pc.n_seg + i) + 1u];
    if (j != 0xffffffffu && (bi == 0xffffffffu || before(v, j, bv, bi))) {
      bv = v;
      bi = j;
    }
  }
  sv[tid] = bv;
  si_[tid] = bi;
  reduce_best(tid);
  uint pick = si_[0] == 0xffffffffu ? 0u : si_[0];
  if (tid == 0u) di[pc.d_off + r.y * pc.d_nb.x + r.z * pc.d_nb.y + r.w * pc.d_nb.z] = int(pick);
}

void main() {
  uint g = group_index();
  uint row = pc.mode == 3u ? g / pc.n_seg : g;
  if (row >= pc.ne.y * pc.ne.z * pc.ne.w) return;
  uvec4 r = unravel(row * pc.ne.x, pc.ne);
  uint a0 = pc.a_off + idot(r, pc.a_nb);
  uint tid = gl_LocalInvocationID.x;
  uint td = (pc.types >> 4) & 15u;
  if (pc.mode == 2u) {
    float s = 0.0;
    for (uint j = tid; j < pc.ne.x; j += 256u) s += load_a(pc.types & 15u, a0 + j * pc.a_nb.x);
    sv[tid] = s;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1) {
      if (tid < h) sv[tid] += sv[tid + h];
      barrier();
    }
    if (tid == 0u) store_d(td, pc.d_off + idot(r, pc.d_nb), sv[0]);
    return;
  }
  if (pc.mode == 3u || pc.mode == 4u) {
    argmax_segments(g, r, a0, tid);
    return;
  }
  if (pc.mode == 0u) {
    best(a0, tid, true, 0.0, 0u, false, 0u, pc.ne.x);
    // A row of NaN or -inf only: index 0, as the reference's first-maximum scan leaves it.
    uint bi = si_[0] == 0xffffffffu ? 0u : si_[0];
    if (tid == 0u) di[pc.d_off + r.y * pc.d_nb.x + r.z * pc.d_nb.y + r.w * pc.d_nb.z] = int(bi);
    return;
  }
  float pv = 0.0;
  uint pi = 0u;
  for (uint q = 0u; q < pc.k; ++q) {
    best(a0, tid, q == 0u, pv, pi, true, 0u, pc.ne.x);
    pv = sv[0];
    pi = si_[0];
    barrier();  // everyone has read the pick before the next round overwrites it
    if (tid == 0u) di[pc.d_off + q * pc.d_nb.x + r.y * pc.d_nb.y + r.z * pc.d_nb.z + r.w * pc.d_nb.w] = int(pi);
  }
}
