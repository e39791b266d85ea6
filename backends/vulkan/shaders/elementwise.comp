#version 450
// elementwise.comp - binary (ADD/SUB/MUL/DIV, b broadcast over a by modulo), unary
// (SCALE/SILU/SIGMOID/SOFTPLUS/EXP) and SWIGLU, one thread per dst element, any strides.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, b)
TENSOR(2, d)

layout(push_constant) uniform Push {
  uvec4 ne;     // dst (= a) shape
  uvec4 a_nb;   // strides, elements
  uvec4 b_ne;
  uvec4 b_nb;
  uvec4 d_nb;
  uint a_off, b_off, d_off;
  uint types;   // a | b << 4 | d << 8
  uint op;      // OP_* below
  uint n;       // dst elements
  float p0, p1; // SCALE: scale, bias
} pc;

#define OP_ADD 0u
#define OP_SUB 1u
#define OP_MUL 2u
#define OP_DIV 3u
#define OP_SCALE 4u
#define OP_SILU 5u
#define OP_SIGMOID 6u
#define OP_SOFTPLUS 7u
#define OP_EXP 8u
#define OP_SWIGLU 9u

float silu(float x) { return x / (1.0 + exp(-x)); }

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uvec4 i = unravel(idx, pc.ne);
  float x = load_a(pc.types & 15u, pc.a_off + idot(i, pc.a_nb));
  float y = 0.0;
  if (pc.op <= OP_DIV || pc.op == OP_SWIGLU) {
    uvec4 j = i % pc.b_ne;
    y = load_b((pc.types >> 4) & 15u, pc.b_off + idot(j, pc.b_nb));
  }
  float r;
  switch (pc.op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    case OP_DIV: r = x / y; break;
    case OP_SCALE: r = x * pc.p0 + pc.p1; break;
    case OP_SILU: r = silu(x); break;
    case OP_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
    case OP_SOFTPLUS: r = x > 20.0 ? x : log1p_f(exp(x)); break;
    case OP_EXP: r = exp(x); break;
    default: r = silu(x) * y; break;
  }
  store_d((pc.types >> 8) & 15u, pc.d_off + idot(i, pc.d_nb), r);
}
