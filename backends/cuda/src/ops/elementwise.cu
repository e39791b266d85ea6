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

// ---- launchers ---------------------------------------------------------------

template <BinaryOp op>
void launch_binary(const Ctx& ctx, const Tensor& a, const Tensor& b, const Tensor& dst) {
  const RowLaunch l = elem_launch(dst.ne[0], nrows(dst));
  if (l.empty()) return;
  binary_kernel<op><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(b), arg(dst), l.rows);
}

template <UnaryOp op>
void launch_unary(const Ctx& ctx, const Tensor& a, const Tensor& dst, float scale = 1.0f, float bias = 0.0f) {
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
