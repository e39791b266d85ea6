// cases_elementwise.cpp - ADD, SUB, MUL, DIV (broadcasting, strided operands), the unary ops and SWIGLU.
#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;

Tensor* apply_binary(Op op, Context& ctx, Tensor* a, Tensor* b) {
  switch (op) {
    case Op::ADD: return add(ctx, a, b);
    case Op::SUB: return sub(ctx, a, b);
    case Op::MUL: return mul(ctx, a, b);
    default: return div(ctx, a, b);  // only the four binary ops reach here
  }
}

void add_binary_cases(Op op, std::vector<OpCase>& out) {
  const std::string n(op_name(op));
  auto c = [&](std::string suffix, double nmse, auto build) {
    out.push_back({.name = n + "_" + suffix,
                   .op = op,
                   .build =
                       [op, build](In& in) {
                         auto [a, b] = build(in);
                         return apply_binary(op, in.ctx, a, b);
                       },
                   .max_nmse = nmse});
  };
  using Pair = std::pair<Tensor*, Tensor*>;
  // kNmseF32: one rounding per element (b is never near zero, so DIV is as tight).
  c("f32_33x31", kNmseF32, [](In& in) { return Pair{in.input(DType::F32, {33, 31}), in.input(DType::F32, {33, 31})}; });
  c("f32_65x7x3_bcast_row", kNmseF32, [](In& in) {
    return Pair{in.input(DType::F32, {65, 7, 3}), in.input(DType::F32, {65})};
  });
  c("f32_31x9_bcast_col", kNmseF32, [](In& in) {
    return Pair{in.input(DType::F32, {31, 9}), in.input(DType::F32, {1, 9})};
  });
  c("f32_33x5x3x2_bcast_33x1x3x1", kNmseF32, [](In& in) {
    return Pair{in.input(DType::F32, {33, 5, 3, 2}), in.input(DType::F32, {33, 1, 3, 1})};
  });
  c("f32_permuted_a_33x7x3", kNmseF32, [](In& in) {
    Tensor* a = permute(in.ctx, in.input(DType::F32, {7, 33, 3}), 1, 0, 2, 3);  // [33, 7, 3], nb[0] = 28
    return Pair{a, in.input(DType::F32, {33, 7, 1})};
  });
  c("f32_transposed_b_33x5x2", kNmseF32, [](In& in) {
    Tensor* b = transpose(in.ctx, in.input(DType::F32, {5, 33}));  // [33, 5], broadcast over dim 2
    return Pair{in.input(DType::F32, {33, 5, 2}), b};
  });
  // Dense F32 of a size divisible by 4 (CUDA's flat float4 path): same shape, and one row
  // broadcast over the rest.
  c("f32_128x6x2_flat", kNmseF32, [](In& in) {
    return Pair{in.input(DType::F32, {128, 6, 2}), in.input(DType::F32, {128, 6, 2})};
  });
  c("f32_64x5x3_flat_bcast_row", kNmseF32, [](In& in) {
    return Pair{in.input(DType::F32, {64, 5, 3}), in.input(DType::F32, {64})};
  });
  // The result takes a's dtype: f16 and bf16 rounding bound the error.
  c("f16_33x31_b_f32", kNmseF16Out, [](In& in) {
    return Pair{in.input(DType::F16, {33, 31}), in.input(DType::F32, {33, 31})};
  });
  c("bf16_65x3_b_bf16_bcast", kNmseBf16Out, [](In& in) {
    return Pair{in.input(DType::BF16, {65, 3}), in.input(DType::BF16, {65, 1})};
  });
}

Tensor* apply_unary(Op op, Context& ctx, Tensor* a) {
  switch (op) {
    case Op::SCALE: return scale(ctx, a, 0.75f, -0.25f);
    case Op::SILU: return silu(ctx, a);
    case Op::SIGMOID: return sigmoid(ctx, a);
    case Op::SOFTPLUS: return softplus(ctx, a);
    default: return exp(ctx, a);  // only the unary ops reach here
  }
}

void add_unary_cases(Op op, const Fill& fill, std::vector<OpCase>& out) {
  const std::string n(op_name(op));
  auto c = [&](std::string suffix, double nmse, DType t, std::initializer_list<int64_t> ne, bool transposed) {
    std::vector<int64_t> shape(ne);
    out.push_back({.name = n + "_" + suffix,
                   .op = op,
                   .build =
                       [=](In& in) {
                         Tensor* a = in.input(t, {shape[0], shape[1], shape[2]}, fill);
                         return apply_unary(op, in.ctx, transposed ? transpose(in.ctx, a) : a);
                       },
                   .max_nmse = nmse});
  };
  // kNmseF32: libm-accurate f32 per element; f16 results round once.
  c("f32_33x31x3", kNmseF32, DType::F32, {33, 31, 3}, false);
  c("f32_transposed_31x33", kNmseF32, DType::F32, {33, 31, 1}, true);
  c("f16_65x3", kNmseF16Out, DType::F16, {65, 3, 1}, false);
  c("f32_128x4x3_flat", kNmseF32, DType::F32, {128, 4, 3}, false);  // CUDA's flat float4 path
}

void add_swiglu_cases(std::vector<OpCase>& out) {
  // kNmseF32: silu(g) * u is a few f32 roundings per element.
  out.push_back({.name = "swiglu_f32_65x7",
                 .op = Op::SWIGLU,
                 .build =
                     [](In& in) {
                       return swiglu(in.ctx, in.input(DType::F32, {65, 7}), in.input(DType::F32, {65, 7}));
                     },
                 .max_nmse = kNmseF32});
  // Gate and up as strided halves of one fused [2F, T] projection.
  out.push_back({.name = "swiglu_f32_fused_views_33x5",
                 .op = Op::SWIGLU,
                 .build =
                     [](In& in) {
                       Tensor* gu = in.input(DType::F32, {66, 5});
                       Tensor* g = view_2d(in.ctx, gu, 33, 5, gu->nb[1], 0);
                       Tensor* u = view_2d(in.ctx, gu, 33, 5, gu->nb[1], 33 * sizeof(float));
                       return swiglu(in.ctx, g, u);
                     },
                 .max_nmse = kNmseF32});
  out.push_back({.name = "swiglu_f32_128x5_flat",  // CUDA's flat float4 path
                 .op = Op::SWIGLU,
                 .build =
                     [](In& in) {
                       return swiglu(in.ctx, in.input(DType::F32, {128, 5}), in.input(DType::F32, {128, 5}));
                     },
                 .max_nmse = kNmseF32});
  out.push_back({.name = "swiglu_f16_31x3",
                 .op = Op::SWIGLU,
                 .build =
                     [](In& in) {
                       return swiglu(in.ctx, in.input(DType::F16, {31, 3}), in.input(DType::F16, {31, 3}));
                     },
                 .max_nmse = kNmseF16Out});
}

// Runs of elementwise nodes as the model builds them (the CUDA backend fuses each run into one
// kernel). kNmseF32: a few f32 roundings and libm calls per element.
void add_chain_cases(std::vector<OpCase>& out) {
  // GDN decay gate: softplus(alpha + dt_bias) * a, broadcast bias and a.
  out.push_back({.name = "mul_chain_add_softplus_mul_f32_32x5",
                 .op = Op::MUL,
                 .build =
                     [](In& in) {
                       Tensor* x = in.input(DType::F32, {32, 5});
                       Tensor* sp = softplus(in.ctx, add(in.ctx, x, in.input(DType::F32, {32})));
                       return mul(in.ctx, sp, in.input(DType::F32, {32}));
                     },
                 .max_nmse = kNmseF32});
  // (Both of these are dense F32 of sizes divisible by 4: CUDA runs them on its flat path; the
  // f16 chain below takes the strided kernel.)
  // Output gate: y * silu(z), the chain value as the second operand of the mul.
  out.push_back({.name = "mul_chain_silu_second_operand_f32_128x6",
                 .op = Op::MUL,
                 .build =
                     [](In& in) {
                       Tensor* y = in.input(DType::F32, {128, 6});
                       return mul(in.ctx, y, silu(in.ctx, in.input(DType::F32, {128, 6})));
                     },
                 .max_nmse = kNmseF32});
  // Four steps with an f16 intermediate (rounded between steps as separate kernels would).
  out.push_back({.name = "sub_chain_scale_f16_sigmoid_sub_f32_65x3",
                 .op = Op::SUB,
                 .build =
                     [](In& in) {
                       Tensor* h = scale(in.ctx, in.input(DType::F16, {65, 3}), 0.5f);
                       Tensor* s = sigmoid(in.ctx, exp(in.ctx, h));
                       return sub(in.ctx, in.input(DType::F16, {65, 3}), s);
                     },
                 .max_nmse = kNmseF16Out});
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
  std::vector<OpCase> out;
  for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::DIV}) add_binary_cases(op, out);
  add_unary_cases(Op::SCALE, Fill::nonzero(), out);
  add_unary_cases(Op::SILU, Fill::nonzero(0.1, 6.0), out);
  add_unary_cases(Op::SIGMOID, Fill::nonzero(0.1, 6.0), out);
  add_unary_cases(Op::SOFTPLUS, Fill::nonzero(0.1, 25.0), out);  // crosses the x > 20 switch
  add_unary_cases(Op::EXP, Fill::nonzero(0.1, 4.0), out);
  add_swiglu_cases(out);
  add_chain_cases(out);
  return out;
}

}  // namespace gl::test
