#version 450
// copy.comp - CONT / CPY (the source's elements in row-major order into the destination's
// row-major order, any shapes of equal size, dtype conversion) and CONCAT (a and b joined along
// one dim); one thread per destination element. Same dtypes move bits.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, b)
TENSOR(2, d)

layout(push_constant) uniform Push {
  uvec4 ne;     // destination shape
  uvec4 d_nb;
  uvec4 a_ne;
  uvec4 a_nb;
  uvec4 b_nb;
  uint a_off, b_off, d_off;
  uint types;   // a | b << 4 | d << 8
  uint concat_dim;  // 4: a copy; else CONCAT along this dim
  uint n;
} pc;

void from_a(uint ta, uint ia, uint td, uint id) {
  if (ta == td && (ta == TYPE_F16 || ta == TYPE_BF16)) d16[id] = a16[ia];
  else if (ta == td) di[id] = ai[ia];
  else store_d(td, id, load_a(ta, ia));
}

void from_b(uint tb, uint ib, uint td, uint id) {
  if (tb == td && (tb == TYPE_F16 || tb == TYPE_BF16)) d16[id] = b16[ib];
  else if (tb == td) di[id] = bi[ib];
  else store_d(td, id, load_b(tb, ib));
}

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uint ta = pc.types & 15u, tb = (pc.types >> 4) & 15u, td = (pc.types >> 8) & 15u;
  uvec4 i = unravel(idx, pc.ne);
  uint id = pc.d_off + idot(i, pc.d_nb);
  if (pc.concat_dim == 4u) {
    from_a(ta, pc.a_off + idot(unravel(idx, pc.a_ne), pc.a_nb), td, id);
    return;
  }
  uint c = i[pc.concat_dim], na = pc.a_ne[pc.concat_dim];
  if (c < na) {
    from_a(ta, pc.a_off + idot(i, pc.a_nb), td, id);
  } else {
    i[pc.concat_dim] = c - na;
    from_b(tb, pc.b_off + idot(i, pc.b_nb), td, id);
  }
}
