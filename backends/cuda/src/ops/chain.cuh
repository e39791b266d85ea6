// chain.cuh - elementwise math shared by elementwise.cu and the kernels that fuse a run of
// elementwise nodes behind their own result (the GEMV epilogue in matmul_gemv.cu).
//
//   Chain c;                                   // built on the host by make_step(), node by node
//   chain_run(c, v, i0, i1, i2, i3);           // device: every step applied to v, every result stored
//
// Each step rounds through its node's dtype exactly as the separate kernel would, so a fused run
// writes the same bits as the nodes launched one by one.
#pragma once

#include "cuda_utils.cuh"

namespace gl::cuda {

enum class BinaryOp { ADD, SUB, MUL, DIV, SWIGLU };
enum class UnaryOp { SCALE, SILU, SIGMOID, SOFTPLUS, EXP };

__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + expf(-x)); }

template <BinaryOp op>
__device__ __forceinline__ float apply_binary(float a, float b) {
  if constexpr (op == BinaryOp::ADD) return a + b;
  if constexpr (op == BinaryOp::SUB) return a - b;
  if constexpr (op == BinaryOp::MUL) return a * b;
  if constexpr (op == BinaryOp::DIV) return a / b;
  if constexpr (op == BinaryOp::SWIGLU) return silu_f(a) * b;
}

template <UnaryOp op>
__device__ __forceinline__ float apply_unary(float x, float scale, float bias) {
  if constexpr (op == UnaryOp::SCALE) return __fadd_rn(__fmul_rn(x, scale), bias);  // two roundings, as on the CPU
  if constexpr (op == UnaryOp::SILU) return silu_f(x);
  if constexpr (op == UnaryOp::SIGMOID) return 1.0f / (1.0f + expf(-x));
  if constexpr (op == UnaryOp::SOFTPLUS) return x > 20.0f ? x : log1pf(expf(x));  // torch's threshold
  if constexpr (op == UnaryOp::EXP) return expf(x);
}

// ---- fused chains ------------------------------------------------------------
//
// A run of elementwise nodes of one shape, each reading the previous one (the GDN gate path
// add -> softplus -> mul, silu -> mul, ...), as one kernel: each thread carries its element through
// every step and stores every step's result (so any other reader still finds it), rounding through
// the node's dtype exactly as the separate kernels would.

constexpr int kMaxChain = 4;

struct ChainStep {
  Op op = Op::NONE;
  TensorArg other{};         // a binary step's other operand, broadcast onto the chain's shape
  bool other_first = false;  // the other operand is src[0] (the chain value is src[1])
  float scale = 1.0f, bias = 0.0f;
  TensorArg out{};
};

struct Chain {
  TensorArg in{};  // src[0] of the first node
  ChainStep step[kMaxChain];
  int n = 0;
};

__device__ __forceinline__ float chain_binary(Op op, float a, float b) {
  switch (op) {
    case Op::ADD: return apply_binary<BinaryOp::ADD>(a, b);
    case Op::SUB: return apply_binary<BinaryOp::SUB>(a, b);
    case Op::MUL: return apply_binary<BinaryOp::MUL>(a, b);
    case Op::DIV: return apply_binary<BinaryOp::DIV>(a, b);
    default: return apply_binary<BinaryOp::SWIGLU>(a, b);
  }
}

__device__ __forceinline__ float chain_unary(const ChainStep& s, float x) {
  switch (s.op) {
    case Op::SCALE: return apply_unary<UnaryOp::SCALE>(x, s.scale, s.bias);
    case Op::SILU: return apply_unary<UnaryOp::SILU>(x, 0.0f, 0.0f);
    case Op::SIGMOID: return apply_unary<UnaryOp::SIGMOID>(x, 0.0f, 0.0f);
    case Op::SOFTPLUS: return apply_unary<UnaryOp::SOFTPLUS>(x, 0.0f, 0.0f);
    default: return apply_unary<UnaryOp::EXP>(x, 0.0f, 0.0f);
  }
}

__host__ __device__ __forceinline__ bool is_binary_op(Op op) {
  return op == Op::ADD || op == Op::SUB || op == Op::MUL || op == Op::DIV || op == Op::SWIGLU;
}

// The other operand of binary step s at element (i0, i1, i2, i3) of the chain's shape (broadcast).
__device__ __forceinline__ float chain_operand(const ChainStep& s, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const TensorArg& o = s.other;
  return load_plain(o.type, row_ptr(o, i1 % o.ne[1], i2 % o.ne[2], i3 % o.ne[3]) + (i0 % o.ne[0]) * o.nb[0]);
}

// Every binary step's operand, loaded ahead of the chain (a GEMV fetches them before its main
// loop). Only for chains whose operands no step writes (mul_mat_chain checks it); chain_run
// without them loads each one after the previous step's store.
__device__ __forceinline__ void chain_fetch(const Chain& c, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                                            float (&others)[kMaxChain]) {
#pragma unroll
  for (int k = 0; k < kMaxChain; ++k)
    others[k] = k < c.n && is_binary_op(c.step[k].op) ? chain_operand(c.step[k], i0, i1, i2, i3) : 0.0f;
}

// Step s applied to v with its other operand w (binary steps); stores the step's result and
// returns it as the next kernel would read it back.
__device__ __forceinline__ float chain_step(const ChainStep& s, float v, float w, int64_t i0, int64_t i1, int64_t i2,
                                            int64_t i3) {
  if (is_binary_op(s.op)) {
    v = s.other_first ? chain_binary(s.op, w, v) : chain_binary(s.op, v, w);
  } else {
    v = chain_unary(s, v);
  }
  store_plain(s.out.type, row_ptr(s.out, i1, i2, i3) + i0 * s.out.nb[0], v);
  return round_to(s.out.type, v);
}

// Applies every step of c to v, the value of element (i0, i1, i2, i3) of the chain's shape,
// storing each step's result; operands from chain_fetch.
__device__ __forceinline__ void chain_run(const Chain& c, float v, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                                          const float (&others)[kMaxChain]) {
#pragma unroll
  for (int k = 0; k < kMaxChain; ++k) {
    if (k >= c.n) break;
    v = chain_step(c.step[k], v, others[k], i0, i1, i2, i3);
  }
}

// The same, each operand loaded after the previous step's store (an operand may be an earlier
// step's result).
__device__ __forceinline__ void chain_run(const Chain& c, float v, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
#pragma unroll
  for (int k = 0; k < kMaxChain; ++k) {
    if (k >= c.n) break;
    const ChainStep& s = c.step[k];
    v = chain_step(s, v, is_binary_op(s.op) ? chain_operand(s, i0, i1, i2, i3) : 0.0f, i0, i1, i2, i3);
  }
}

// Host side (elementwise.cu): whether node n can be a chain step, and its step when the chain
// value is prev (nullptr: the node's src[0]); other is set to a binary step's other operand.
bool chainable(const Tensor& n);
bool make_step(const Tensor& n, const Tensor* prev, ChainStep& st, const Tensor*& other);

}  // namespace gl::cuda
