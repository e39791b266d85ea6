#version 450
// elementwise.comp - binary (ADD/SUB/MUL/DIV, b broadcast over a by modulo), unary
// (SCALE/SILU/SIGMOID/SOFTPLUS/EXP) and SWIGLU, one thread per dst element, any strides; compiled
// with CHAIN (elementwise_chain), a run of such nodes as one dispatch.
#include "common.glsl"

layout(local_size_x = 256) in;

TENSOR(0, a)
TENSOR(1, b)
TENSOR(2, d)

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

// Node op of x (and y, a binary op's second operand; SCALE: x * p0 + p1). One function for the
// node-by-node shader and the fused chain, so both give the same bits.
float apply_op(uint op, float x, float y, float p0, float p1) {
  switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_SCALE: {
      precise float m = x * p0;  // two roundings, as on the CPU
      return m + p1;
    }
    case OP_SILU: return silu(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case OP_SOFTPLUS: return x > 20.0 ? x : log1p_f(exp(x));
    case OP_EXP: return exp(x);
    default: return silu(x) * y;
  }
}

bool binary_op(uint op) { return op <= OP_DIV || op == OP_SWIGLU; }

#ifndef CHAIN

layout(push_constant) uniform Push {
  uvec4 ne;     // dst (= a) shape
  uvec4 a_nb;   // strides, elements
  uvec4 b_ne;
  uvec4 b_nb;
  uvec4 d_nb;
  uint a_off, b_off, d_off;
  uint types;   // a | b << 4 | d << 8
  uint op;      // OP_* above
  uint n;       // dst elements
  float p0, p1; // SCALE: scale, bias
} pc;

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  uvec4 i = unravel(idx, pc.ne);
  float x = load_a(pc.types & 15u, pc.a_off + idot(i, pc.a_nb));
  float y = 0.0;
  if (binary_op(pc.op)) {
    uvec4 j = i % pc.b_ne;
    y = load_b((pc.types >> 4) & 15u, pc.b_off + idot(j, pc.b_nb));
  }
  store_d((pc.types >> 8) & 15u, pc.d_off + idot(i, pc.d_nb), apply_op(pc.op, x, y, pc.p0, pc.p1));
}

#else  // CHAIN: elementwise_chain, ops/elementwise.cpp's elementwise_chain

// A run of up to kSteps elementwise nodes of one shape, each reading the one before (the GDN gate's
// add -> softplus -> mul, silu -> mul, ...), every tensor dense F32: each invocation carries its
// element through every step and stores every step's result (any other reader still finds it).
// All loads come first, so an output may be an input of the same element (in place); an output
// in place of an earlier step's is the only one stored there (two bindings' stores are not
// ordered).
#define kSteps 3u

// Bindings: 0 the first node's input (a), 1..3 the steps' results, 4..6 their other operands.
layout(binding = 1) buffer R0 { float r0[]; };
layout(binding = 2) buffer R1 { float r1[]; };
layout(binding = 3) buffer R2 { float r2[]; };
layout(binding = 4) buffer O0 { float o0[]; };
layout(binding = 5) buffer O1 { float o1[]; };
layout(binding = 6) buffer O2 { float o2[]; };

layout(push_constant) uniform Push {
  uint n, steps;
  uint in_off;
  uint out_off[kSteps], other_off[kSteps];
  uint op[kSteps];
  uint other_first;  // bit s: step s's other operand is the node's first source
  uint skip_store;   // bit s: a later step's result goes in place of step s's, so s's is not stored
  float p0[kSteps], p1[kSteps];
} pc;

void main() {
  uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= pc.n) return;
  float v = a32[pc.in_off + idx];
  float y[kSteps];
  y[0] = binary_op(pc.op[0]) ? o0[pc.other_off[0] + idx] : 0.0;
  y[1] = pc.steps > 1u && binary_op(pc.op[1]) ? o1[pc.other_off[1] + idx] : 0.0;
  y[2] = pc.steps > 2u && binary_op(pc.op[2]) ? o2[pc.other_off[2] + idx] : 0.0;
  for (uint s = 0u; s < pc.steps; ++s) {
    bool first = ((pc.other_first >> s) & 1u) != 0u;
    v = first ? apply_op(pc.op[s], y[s], v, pc.p0[s], pc.p1[s]) : apply_op(pc.op[s], v, y[s], pc.p0[s], pc.p1[s]);
    if (((pc.skip_store >> s) & 1u) != 0u) continue;
    if (s == 0u) r0[pc.out_off[0] + idx] = v;
    else if (s == 1u) r1[pc.out_off[1] + idx] = v;
    else r2[pc.out_off[2] + idx] = v;
  }
}

#endif
