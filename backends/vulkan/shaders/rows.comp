#version 450
// rows.comp - GET_ROWS (out[:, i, b2, b3] = a[:, ids[i, b2, b3], b2, b3]) and SET_ROWS
// (dst[:, ids[i, b2, b3], b2, b3] = src[:, i, b2, b3]; of repeated ids the last row writes, as on
// the CPU), with dtype conversion; one thread per element moved. Same dtypes move bits; GET_ROWS
// also reads quantized rows (s_nb in 16-bit words, dim 0 in blocks: quants.glsl). An id
// outside [0, n_rows) moves nothing (the CPU reference aborts on it).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, s)
TENSOR(1, x)
TENSOR(2, d)
#define QARR s16
#include "quants.glsl"

layout(push_constant) uniform Push {
  uvec4 ne;     // elements moved: src of SET_ROWS, dst of GET_ROWS
  uvec4 s_nb;   // source strides
  uvec4 d_nb;   // destination strides
  uvec4 x_nb;   // ids strides (dims 0..2 used)
  uint s_off, x_off, d_off;
  uint types;   // s | d << 4
  uint set;     // 1: SET_ROWS
  uint n;       // threads
  uint n_rows;  // rows an id may name
} pc;

void move_elem(uint ts, uint is, uint td, uint id) {
  if (ts == td && (ts == TYPE_F16 || ts == TYPE_BF16)) d16[id] = s16[is];
  else if (ts == td) di[id] = si[is];
  else store_d(td, id, load_s(ts, is));
}

int id_at(uint i, uint b2, uint b3) { return xi[pc.x_off + i * pc.x_nb.x + b2 * pc.x_nb.y + b3 * pc.x_nb.z]; }

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uvec4 e = unravel(idx, pc.ne);
  int id = id_at(e.y, e.z, e.w);
  if (id < 0 || uint(id) >= pc.n_rows) return;
  uint ts = pc.types & 15u, td = (pc.types >> 4) & 15u;
  uvec4 from = e, to = e;
  if (pc.set == 1u) {
    // A later row writing this id wins: the ids after this row, 8 loads in flight at a time
    // (one at a time, 512 rows of a prefill's KV cache write took 150 us on the H100).
    for (uint j0 = e.y + 1u; j0 < pc.ne.y; j0 += 8u) {
      uint later = 0u;  // ORed without short-circuit branches, which would order the loads again
      [[unroll]] for (uint u = 0u; u < 8u; ++u)
        later |= uint(id_at(min(j0 + u, pc.ne.y - 1u), e.z, e.w) == id) & uint(j0 + u < pc.ne.y);
      if (later != 0u) return;
    }
    to.y = uint(id);
  } else {
    from.y = uint(id);
  }
  uint id_d = pc.d_off + idot(to, pc.d_nb);
  if (is_quant(ts)) {
    uint qe = quant_elems(ts);
    uint blk = pc.s_off + (from.x / qe) * quant_words(ts) + from.y * pc.s_nb.y + from.z * pc.s_nb.z + from.w * pc.s_nb.w;
    store_d(td, id_d, quant_at(ts, blk, from.x % qe));
    return;
  }
  move_elem(ts, pc.s_off + idot(from, pc.s_nb), td, id_d);
}
