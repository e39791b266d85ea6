// elementwise.cu - ADD/SUB/MUL/DIV (broadcasting), SCALE/SILU/SIGMOID/SOFTPLUS/EXP and SWIGLU.
//
// Why one kernel per family: these ops are memory-bound, so each reads its operands once through
// their byte strides (permuted or strided views need no copy) and computes in float exactly like
// the CPU reference. A row group walks one row, so (i1, i2, i3) are unravelled once per row rather
// than per element. Every element is read and written by the same thread, which keeps the planner's
// in-place reuse (dst == src[0]) safe. Launch errors are checked per node by the backend.
#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"

namespace gl::cuda {
namespace {

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

// ---- kernels -----------------------------------------------------------------

// d = op(a, b) with b broadcast over a by modulo on every dim (b index = a index % b.ne).
template <BinaryOp op>
__global__ void binary_kernel(TensorArg a, TensorArg b, TensorArg d, int64_t rows) {
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

}  // namespace

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
