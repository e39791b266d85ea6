// elementwise.cu - ADD/SUB/MUL/DIV (broadcasting), SCALE/SILU/SIGMOID/SOFTPLUS/EXP and SWIGLU.
//
// Why one kernel per family: these ops are memory-bound, so each reads its operands once through
// their byte strides (permuted or strided views need no copy) and computes in float exactly like
// the CPU reference. A row group walks one row, so (i1, i2, i3) are unravelled once per row rather
// than per element. Every element is read and written by the same thread, which keeps the planner's
// in-place reuse (dst == src[0]) safe. Launch errors are checked per node by the backend.
#include "chain.cuh"
#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"

namespace gl::cuda {
namespace {

// ---- kernels -----------------------------------------------------------------

// d = op(a, b) with b broadcast over a by modulo on every dim (b index = a index % b.ne).
template <BinaryOp op>
__global__ void binary_kernel(TensorArg a, TensorArg b, TensorArg d, int64_t rows) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const int64_t n = d.ne[0];
  const int64_t nb0 = b.ne[0];
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i1, i2, i3;
    unravel_row(d.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    const char* rb = row_ptr(b, i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
    char* rd = row_ptr(d, i1, i2, i3);
    for (int64_t i0 = first_col(); i0 < n; i0 += col_stride()) {
      const int64_t j0 = nb0 == n ? i0 : (nb0 == 1 ? 0 : i0 % nb0);  // skip the modulo in the common cases
      const float x = load_plain(a.type, ra + i0 * a.nb[0]);
      const float y = load_plain(b.type, rb + j0 * b.nb[0]);
      store_plain(d.type, rd + i0 * d.nb[0], apply_binary<op>(x, y));
    }
  }
}

template <UnaryOp op>
__global__ void unary_kernel(TensorArg a, TensorArg d, int64_t rows, float scale, float bias) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i1, i2, i3;
    unravel_row(d.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    char* rd = row_ptr(d, i1, i2, i3);
    for (int64_t i0 = first_col(); i0 < d.ne[0]; i0 += col_stride())
      store_plain(d.type, rd + i0 * d.nb[0], apply_unary<op>(load_plain(a.type, ra + i0 * a.nb[0]), scale, bias));
  }
}

// ---- dense F32 fast path ------------------------------------------------------
//
// Operands that are dense F32 tensors of the node's shape (a binary operand may also be one row
// [ne0] broadcast over every row) are addressed by the flat element index, four adjacent elements
// (a float4) per thread. The strided kernels above unravel a row per thread, and where a row is
// one element per thread (ne0 = 128, the Gated DeltaNet's heads) that is ~300 instructions of
// 64-bit index arithmetic per element: at pp512 a [128, 32, 512] MUL took 42 us, 5x its bytes.
// The same float operations on the same values, so the same bits.

constexpr int kFlatThreads = 256;
constexpr uint32_t kFlatMaxBlocks = 4096;

// An operand read flat: element 4 i of the node reads p[4 (i % period4)] .. + 3.
struct FlatIn {
  const float* p = nullptr;
  uint32_t period4 = 0;  // the node's n / 4 (same shape) or ne0 / 4 (one row)
};

__device__ __forceinline__ float4 load4(const FlatIn& a, uint32_t i, uint32_t n4) {
  return reinterpret_cast<const float4*>(a.p)[a.period4 == n4 ? i : i % a.period4];
}

__device__ __forceinline__ void store4(float* d, uint32_t i, float4 v) { reinterpret_cast<float4*>(d)[i] = v; }

__device__ __forceinline__ uint32_t flat_first() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ uint32_t flat_stride() { return gridDim.x * blockDim.x; }

template <BinaryOp op>
__global__ void binary_flat_kernel(FlatIn a, FlatIn b, float* d, uint32_t n4) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  for (uint32_t i = flat_first(); i < n4; i += flat_stride()) {
    const float4 x = load4(a, i, n4), y = load4(b, i, n4);
    store4(d, i,
           make_float4(apply_binary<op>(x.x, y.x), apply_binary<op>(x.y, y.y), apply_binary<op>(x.z, y.z),
                       apply_binary<op>(x.w, y.w)));
  }
}

template <UnaryOp op>
__global__ void unary_flat_kernel(FlatIn a, float* d, uint32_t n4, float scale, float bias) {
  pdl_trigger();
  for (uint32_t i = flat_first(); i < n4; i += flat_stride()) {
    const float4 x = load4(a, i, n4);
    store4(d, i,
           make_float4(apply_unary<op>(x.x, scale, bias), apply_unary<op>(x.y, scale, bias),
                       apply_unary<op>(x.z, scale, bias), apply_unary<op>(x.w, scale, bias)));
  }
}

// A fused chain (chain.cuh) over dense F32 steps: each thread carries its four elements through
// every step, storing each step's result, as chain_kernel does element by element.
struct FlatChain {
  FlatIn in, other[kMaxChain];
  float* out[kMaxChain] = {};
};

__device__ __forceinline__ float4 chain_step4(const ChainStep& s, float4 v, float4 w) {
  if (!is_binary_op(s.op))
    return make_float4(chain_unary(s, v.x), chain_unary(s, v.y), chain_unary(s, v.z), chain_unary(s, v.w));
  if (s.other_first) {
    const float4 t = v;
    v = w, w = t;
  }
  return make_float4(chain_binary(s.op, v.x, w.x), chain_binary(s.op, v.y, w.y), chain_binary(s.op, v.z, w.z),
                     chain_binary(s.op, v.w, w.w));
}

__global__ void chain_flat_kernel(Chain c, FlatChain f, uint32_t n4) {
  pdl_trigger();
  for (uint32_t i = flat_first(); i < n4; i += flat_stride()) {
    float4 v = load4(f.in, i, n4);
#pragma unroll
    for (int k = 0; k < kMaxChain; ++k) {
      if (k >= c.n) break;
      const bool bin = is_binary_op(c.step[k].op);
      v = chain_step4(c.step[k], v, bin ? load4(f.other[k], i, n4) : float4{});
      store4(f.out[k], i, v);
    }
  }
}

// t as a flat operand of a node shaped like `like`: dense F32 on a 16-byte boundary, of like's
// shape or one row [ne0] of it (with ne0 and the node's size multiples of 4).
bool flat_in(const Tensor& t, const Tensor& like, FlatIn& f) {
  const int64_t n = nelements(like);
  if (!dense_f32(t)) return false;
  if (n % 4 != 0 || n / 4 > int64_t{UINT32_MAX}) return false;
  f.p = static_cast<const float*>(t.data);
  if (same_shape(t, like)) return f.period4 = static_cast<uint32_t>(n / 4), true;
  if (t.ne[0] == like.ne[0] && nelements(t) == t.ne[0] && t.ne[0] % 4 == 0)
    return f.period4 = static_cast<uint32_t>(t.ne[0] / 4), true;
  return false;
}

// The node's own output, written flat: dense F32 of its shape.
bool flat_out(const Tensor& t, float*& d) {
  FlatIn f;
  if (!flat_in(t, t, f)) return false;
  d = static_cast<float*>(t.data);
  return true;
}

unsigned flat_blocks(const Tensor& t) {
  const int64_t n4 = nelements(t) / 4;
  return static_cast<unsigned>(std::min<int64_t>((n4 + kFlatThreads - 1) / kFlatThreads, kFlatMaxBlocks));
}

// ---- launchers ---------------------------------------------------------------

template <BinaryOp op>
void launch_binary(const Ctx& ctx, const Tensor& a, const Tensor& b, const Tensor& dst) {
  FlatIn fa, fb;
  float* d = nullptr;
  if (flat_in(a, dst, fa) && flat_in(b, dst, fb) && flat_out(dst, d)) {
    if (nelements(dst) == 0) return;
    const auto n4 = static_cast<uint32_t>(nelements(dst) / 4);
    binary_flat_kernel<op><<<flat_blocks(dst), kFlatThreads, 0, ctx.stream>>>(fa, fb, d, n4);
    return;
  }
  const RowLaunch l = elem_launch(dst.ne[0], nrows(dst));
  if (l.empty()) return;
  binary_kernel<op><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(b), arg(dst), l.rows);
}

template <UnaryOp op>
void launch_unary(const Ctx& ctx, const Tensor& a, const Tensor& dst, float scale = 1.0f, float bias = 0.0f) {
  FlatIn fa;
  float* d = nullptr;
  if (flat_in(a, dst, fa) && fa.period4 * int64_t{4} == nelements(dst) && flat_out(dst, d)) {
    if (nelements(dst) == 0) return;
    const auto n4 = static_cast<uint32_t>(nelements(dst) / 4);
    unary_flat_kernel<op><<<flat_blocks(dst), kFlatThreads, 0, ctx.stream>>>(fa, d, n4, scale, bias);
    return;
  }
  const RowLaunch l = elem_launch(dst.ne[0], nrows(dst));
  if (l.empty()) return;
  unary_kernel<op><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(dst), l.rows, scale, bias);
}

bool is_float(const Tensor* t) { return t && is_float_type(t->type); }

__global__ void chain_kernel(Chain c, int64_t rows) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const TensorArg& shape = c.step[0].out;
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i1, i2, i3;
    unravel_row(shape.ne, r, i1, i2, i3);
    const char* ri = row_ptr(c.in, i1, i2, i3);
    for (int64_t i0 = first_col(); i0 < shape.ne[0]; i0 += col_stride())
      chain_run(c, load_plain(c.in.type, ri + i0 * c.in.nb[0]), i0, i1, i2, i3);
  }
}

}  // namespace

bool chainable(const Tensor& n) {
  switch (n.op) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV:
    case Op::SWIGLU:
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP: return supports_elementwise(n) && same_shape(*n.src[0], n);
    default: return false;
  }
}

// Step for node n whose chain value is `prev` (nullptr for the first node: its src[0]); other is
// set to the binary step's other operand.
bool make_step(const Tensor& n, const Tensor* prev, ChainStep& st, const Tensor*& other) {
  st.op = n.op;
  st.out = arg(n);
  if (n.op == Op::SCALE) st.scale = n.p<ScaleParams>().scale, st.bias = n.p<ScaleParams>().bias;
  if (!is_binary_op(n.op)) return prev == nullptr || n.src[0] == prev;
  const bool first = prev == nullptr || n.src[0] == prev;
  if (prev && (n.src[0] == prev) == (n.src[1] == prev)) return false;  // reads prev twice, or not at all
  if (!first && !same_shape(*n.src[0], *prev)) return false;           // the other operand must not broadcast
  other = first ? n.src[1] : n.src[0];
  st.other = arg(*other);
  st.other_first = !first;
  return true;
}

namespace {

// Node k's output against everything the chain reads before or at it (see safe_to_fuse).
bool step_safe(std::span<Tensor* const> nodes, int k, std::span<const Tensor* const> others) {
  const Tensor& out = *nodes[static_cast<size_t>(k)];
  if (!safe_to_fuse(out, *nodes[0]->src[0])) return false;
  for (int j = 0; j <= k; ++j)
    if (others[static_cast<size_t>(j)] && !safe_to_fuse(out, *others[static_cast<size_t>(j)])) return false;
  for (int j = 0; j < k; ++j)
    if (!safe_to_fuse(out, *nodes[static_cast<size_t>(j)])) return false;
  return true;
}

// The chain's first input, every step's output and every binary step's other operand as flat
// operands (dense F32; see flat_in).
bool flat_chain(std::span<Tensor* const> nodes, int n, const Tensor* const (&others)[kMaxChain], FlatChain& f) {
  const Tensor& shape = *nodes[0];
  if (!flat_in(*shape.src[0], shape, f.in) || f.in.period4 * int64_t{4} != nelements(shape)) return false;
  for (int k = 0; k < n; ++k) {
    if (!flat_out(*nodes[static_cast<size_t>(k)], f.out[k])) return false;
    if (others[k] && !flat_in(*others[k], shape, f.other[k])) return false;
  }
  return true;
}

}  // namespace

int elementwise_chain(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (nodes.size() < 2 || !chainable(*nodes[0])) return 0;
  Chain c;
  const Tensor* others[kMaxChain] = {};
  c.in = arg(*nodes[0]->src[0]);
  if (!make_step(*nodes[0], nullptr, c.step[0], others[0])) return 0;
  c.n = 1;
  while (c.n < kMaxChain && static_cast<size_t>(c.n) < nodes.size()) {
    const Tensor& n = *nodes[static_cast<size_t>(c.n)];
    if (!chainable(n) || !same_shape(n, *nodes[0])) break;
    if (!make_step(n, nodes[static_cast<size_t>(c.n) - 1], c.step[c.n], others[c.n])) break;
    if (!step_safe(nodes, c.n, others)) break;
    ++c.n;
  }
  if (c.n < 2) return 0;
  if (nelements(*nodes[0]) == 0) return c.n;
  FlatChain f;
  if (flat_chain(nodes, c.n, others, f)) {
    const auto n4 = static_cast<uint32_t>(nelements(*nodes[0]) / 4);
    chain_flat_kernel<<<flat_blocks(*nodes[0]), kFlatThreads, 0, ctx.stream>>>(c, f, n4);
    return c.n;
  }
  const RowLaunch l = elem_launch(nodes[0]->ne[0], nrows(*nodes[0]));
  if (!l.empty()) chain_kernel<<<l.grid, l.block, 0, ctx.stream>>>(c, l.rows);
  return c.n;
}

// ---- entries -----------------------------------------------------------------

void binary(const Ctx& ctx, Tensor& dst) {
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  GL_ASSERT(same_shape(a, dst) && can_broadcast(b, a), "cuda binary: b must broadcast to a, and dst match a");
  if (dst.op == Op::ADD) {
    launch_binary<BinaryOp::ADD>(ctx, a, b, dst);
  } else if (dst.op == Op::SUB) {
    launch_binary<BinaryOp::SUB>(ctx, a, b, dst);
  } else if (dst.op == Op::MUL) {
    launch_binary<BinaryOp::MUL>(ctx, a, b, dst);
  } else if (dst.op == Op::DIV) {
    launch_binary<BinaryOp::DIV>(ctx, a, b, dst);
  } else {
    GL_ASSERT(false, "cuda binary: not an ADD/SUB/MUL/DIV node");
  }
}

void unary(const Ctx& ctx, Tensor& dst) {
  const Tensor& a = *dst.src[0];
  GL_ASSERT(same_shape(a, dst), "cuda unary: dst must match src");
  if (dst.op == Op::SCALE) {
    const ScaleParams p = dst.p<ScaleParams>();
    launch_unary<UnaryOp::SCALE>(ctx, a, dst, p.scale, p.bias);
  } else if (dst.op == Op::SILU) {
    launch_unary<UnaryOp::SILU>(ctx, a, dst);
  } else if (dst.op == Op::SIGMOID) {
    launch_unary<UnaryOp::SIGMOID>(ctx, a, dst);
  } else if (dst.op == Op::SOFTPLUS) {
    launch_unary<UnaryOp::SOFTPLUS>(ctx, a, dst);
  } else if (dst.op == Op::EXP) {
    launch_unary<UnaryOp::EXP>(ctx, a, dst);
  } else {
    GL_ASSERT(false, "cuda unary: not a SCALE/SILU/SIGMOID/SOFTPLUS/EXP node");
  }
}

// silu(gate) * up; gate is src[0] (the operand dst may alias).
void swiglu(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::SWIGLU, "cuda swiglu: not a SWIGLU node");
  const Tensor& gate = *dst.src[0];
  const Tensor& up = *dst.src[1];
  GL_ASSERT(same_shape(gate, up) && same_shape(gate, dst), "cuda swiglu: gate, up and dst must share a shape");
  launch_binary<BinaryOp::SWIGLU>(ctx, gate, up, dst);
}

// Float operands in any layout; the result in the operand's float dtype (as the builders make it).
bool supports_elementwise(const Tensor& node) {
  const Op op = node.op;
  const Tensor* a = node.src[0];
  const Tensor* b = node.src[1];
  if (op == Op::ADD || op == Op::SUB || op == Op::MUL || op == Op::DIV || op == Op::SWIGLU)
    return is_float(&node) && is_float(a) && is_float(b);
  if (op == Op::SCALE || op == Op::SILU || op == Op::SIGMOID || op == Op::SOFTPLUS || op == Op::EXP ||
      op == Op::RMS_NORM || op == Op::L2_NORM)
    return is_float(&node) && is_float(a);
  if (op == Op::SOFTMAX) return is_float(&node) && is_float(a) && (!b || b->type == DType::F32);
  if (op == Op::ROPE) return is_float(&node) && is_float(a) && b && b->type == DType::I32 && node.ne[3] == 1;
  return false;
}

}  // namespace gl::cuda
