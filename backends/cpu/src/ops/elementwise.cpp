// elementwise.cpp - CPU reference for binary (broadcasting), unary and SwiGLU ops.
//
// These loops are the reference the other backends are checked against, so they
// compute in float (the activations' precision) with no fusion. Each row is read
// before it is written, which makes dst == src[0] (the planner's in-place reuse)
// safe. Contiguous F32 rows take a pointer fast path; anything else (F16/BF16,
// strided views) goes through load_row/store_row with per-thread scratch.
#include <cmath>
#include <vector>

#include "ggml-lite/status.h"
#include "kernels.h"
#include "parallel.h"
#include "rows.h"
#include "team.h"

namespace gl::cpu {
namespace {

// Below this many elements a parallel region costs more than it saves.

const float* f32_row(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<const float*>(elem_ptr(t, 0, i1, i2, i3));
}
float* f32_row_mut(const Tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<float*>(elem_ptr(t, 0, i1, i2, i3));
}

float sigmoid_f(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu_f(float x) { return x / (1.0f + std::exp(-x)); }
// torch's threshold: above 20, log1p(exp(x)) == x in float.
float softplus_f(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// d[i] = f(a[i], b[i % nb]); d may alias a (each element is read before it is written).
template <class F>
void binary_row(const float* a, const float* b, float* d, int64_t n, int64_t nb, F f) {
  if (nb == n) {
    for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
  } else if (nb == 1) {
    const float s = b[0];
    for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], s);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i % nb]);
  }
}

// dst = f(a, b) with b broadcast over a by modulo on every dim.
template <class F>
void binary_rows(const Tensor& dst, F f) {
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  GL_ASSERT(can_broadcast(b, a) && same_shape(a, dst), "binary: b must broadcast to a, and dst match a");
  const int64_t n = dst.ne[0];
  const int64_t nb0 = b.ne[0];
  const int64_t rows = nrows(dst);
  const bool fast = is_f32_rows(a) && is_f32_rows(b) && is_f32_rows(dst);
  parallel_for(rows, rows * n >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> xa(fast ? 0 : n);
    std::vector<float> xb(fast ? 0 : nb0);
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, i1, i2, i3);
      const int64_t j1 = i1 % b.ne[1], j2 = i2 % b.ne[2], j3 = i3 % b.ne[3];
      if (fast) {
        binary_row(f32_row(a, i1, i2, i3), f32_row(b, j1, j2, j3), f32_row_mut(dst, i1, i2, i3), n, nb0, f);
        continue;
      }
      load_row(a, i1, i2, i3, xa.data());
      load_row(b, j1, j2, j3, xb.data());
      binary_row(xa.data(), xb.data(), xa.data(), n, nb0, f);
      store_row(dst, i1, i2, i3, xa.data());
    }
  });
}

// dst = f(src[0]) elementwise, same shape.
template <class F>
void unary_rows(const Tensor& dst, F f) {
  const Tensor& a = *dst.src[0];
  GL_ASSERT(same_shape(a, dst), "unary: dst must match src");
  const int64_t n = dst.ne[0];
  const int64_t rows = nrows(dst);
  const bool fast = is_f32_rows(a) && is_f32_rows(dst);
  parallel_for(rows, rows * n >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> x(fast ? 0 : n);
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, i1, i2, i3);
      const float* in = f32_row(a, i1, i2, i3);
      float* out = f32_row_mut(dst, i1, i2, i3);
      if (!fast) {
        load_row(a, i1, i2, i3, x.data());
        in = out = x.data();
      }
      for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
      if (!fast) store_row(dst, i1, i2, i3, x.data());
    }
  });
}

}  // namespace

void binary(Tensor& dst) {
  if (dst.op == Op::ADD) {
    binary_rows(dst, [](float a, float b) { return a + b; });
  } else if (dst.op == Op::SUB) {
    binary_rows(dst, [](float a, float b) { return a - b; });
  } else if (dst.op == Op::MUL) {
    binary_rows(dst, [](float a, float b) { return a * b; });
  } else if (dst.op == Op::DIV) {
    binary_rows(dst, [](float a, float b) { return a / b; });
  } else {
    GL_ASSERT(false, "binary: not an ADD/SUB/MUL/DIV node");
  }
}

void unary(Tensor& dst) {
  if (dst.op == Op::SCALE) {
    const ScaleParams p = dst.p<ScaleParams>();
    unary_rows(dst, [p](float x) { return x * p.scale + p.bias; });
  } else if (dst.op == Op::SILU) {
    unary_rows(dst, [](float x) { return silu_f(x); });
  } else if (dst.op == Op::SIGMOID) {
    unary_rows(dst, [](float x) { return sigmoid_f(x); });
  } else if (dst.op == Op::SOFTPLUS) {
    unary_rows(dst, [](float x) { return softplus_f(x); });
  } else if (dst.op == Op::EXP) {
    unary_rows(dst, [](float x) { return std::exp(x); });
  } else {
    GL_ASSERT(false, "unary: not a SCALE/SILU/SIGMOID/SOFTPLUS/EXP node");
  }
}

// silu(gate) * up; gate is src[0] (the operand dst may alias).
void swiglu(Tensor& dst) {
  GL_ASSERT(dst.op == Op::SWIGLU, "swiglu: not a SWIGLU node");
  const Tensor& gate = *dst.src[0];
  const Tensor& up = *dst.src[1];
  GL_ASSERT(same_shape(gate, up) && same_shape(gate, dst), "swiglu: gate, up and dst must share a shape");
  binary_rows(dst, [](float g, float u) { return silu_f(g) * u; });
}

}  // namespace gl::cpu
