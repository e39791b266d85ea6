// cases_reduce.cpp - RMS_NORM, L2_NORM, ARGMAX, TOP_K (exact indices, ties by construction) and SUM_ROWS.
#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;
using Build = std::function<Tensor*(In&)>;

void push(std::vector<OpCase>& out, std::string name, Op op, double nmse, Build build) {
  out.push_back({.name = std::move(name), .op = op, .build = std::move(build), .max_nmse = nmse});
}

Tensor* apply_norm(Op op, Context& ctx, Tensor* x) {
  return op == Op::RMS_NORM ? rms_norm(ctx, x, 1e-6f) : l2_norm(ctx, x, 1e-6f);
}

void add_norm(Op op, std::vector<OpCase>& out) {
  const std::string n(op_name(op));
  // kNmseF32Sum: a sum of squares over the row, then one scale per element.
  push(out, n + "_f32_4096x3", op, kNmseF32Sum, [op](In& in) {
    return apply_norm(op, in.ctx, in.input(DType::F32, {4096, 3}));
  });
  push(out, n + "_f32_33x7x3", op, kNmseF32Sum, [op](In& in) {
    return apply_norm(op, in.ctx, in.input(DType::F32, {33, 7, 3}));
  });
  push(out, n + "_f32_strided_rows_31x5", op, kNmseF32Sum, [op](In& in) {
    Tensor* x = in.input(DType::F32, {40, 5});
    return apply_norm(op, in.ctx, view_2d(in.ctx, x, 31, 5, x->nb[1], 2 * sizeof(float)));
  });
  push(out, n + "_f32_transposed_33x5", op, kNmseF32Sum, [op](In& in) {
    return apply_norm(op, in.ctx, transpose(in.ctx, in.input(DType::F32, {5, 33})));
  });
  push(out, n + "_f16_65x3", op, kNmseF16Out, [op](In& in) {  // the result is f16
    return apply_norm(op, in.ctx, in.input(DType::F16, {65, 3}));
  });
  // The model's pattern, norm then a broadcast weight (the CUDA backend fuses the pair into one
  // kernel). kNmseF32Sum: the norm's error, times w.
  push(out, n + "_then_mul_weight_f32_4096x3", Op::MUL, kNmseF32Sum, [op](In& in) {
    Tensor* y = apply_norm(op, in.ctx, in.input(DType::F32, {4096, 3}));
    return mul(in.ctx, y, in.input(DType::F32, {4096}));
  });
  push(out, n + "_then_mul_weight_f32_heads_33x7x3", Op::MUL, kNmseF32Sum, [op](In& in) {
    Tensor* y = apply_norm(op, in.ctx, in.input(DType::F32, {33, 7, 3}));
    return mul(in.ctx, y, in.input(DType::F32, {33, 7}));
  });
  // A layer's residual add, then the norm and weight (CUDA fuses the three); the result reads the
  // sum again, so the fused kernel's store of the add is checked too. kNmseF32Sum as above.
  for (const int64_t width : {4096, 200}) {
    push(out, fmt::format("add_then_{}_then_mul_weight_f32_{}x3", n, width), Op::ADD, kNmseF32Sum, [op, width](In& in) {
      Tensor* sum = add(in.ctx, in.input(DType::F32, {width, 3}), in.input(DType::F32, {width, 3}));
      Tensor* y = mul(in.ctx, apply_norm(op, in.ctx, sum), in.input(DType::F32, {width}));
      return add(in.ctx, y, sum);
    });
  }
}

// Argmax/top_k: indices must match exactly. Inputs are either distinct values
// spaced far beyond any rounding (no near-ties) or small integers (exact ties,
// which the contract breaks by the lower index).
OpCase selection(std::string name, Op op, Build build) {
  return {.name = std::move(name), .op = op, .build = std::move(build), .compare = compare_indices};
}

void add_argmax(std::vector<OpCase>& out) {
  out.push_back(selection("argmax_f32_257x9_distinct", Op::ARGMAX, [](In& in) {
    return argmax(in.ctx, in.input(DType::F32, {257, 9}, Fill::distinct(0.01)));
  }));
  out.push_back(selection("argmax_f32_4096x3_distinct", Op::ARGMAX, [](In& in) {
    return argmax(in.ctx, in.input(DType::F32, {4096, 3}, Fill::distinct(1e-3)));
  }));
  out.push_back(selection("argmax_f32_33x17_ties", Op::ARGMAX, [](In& in) {
    return argmax(in.ctx, in.input(DType::F32, {33, 17}, Fill::integers(-3, 3)));
  }));
  out.push_back(selection("argmax_f32_transposed_33x7x2", Op::ARGMAX, [](In& in) {
    return argmax(in.ctx, transpose(in.ctx, in.input(DType::F32, {7, 33, 2}, Fill::integers(-40, 40))));
  }));
  out.push_back(selection("argmax_f16_65x5_distinct", Op::ARGMAX, [](In& in) {
    return argmax(in.ctx, in.input(DType::F16, {65, 5}, Fill::distinct(1.0 / 64)));  // multiples of 2^-7: exact in f16
  }));
}

void add_top_k(std::vector<OpCase>& out) {
  struct K {
    int64_t n, rows;
    int k;
  };
  // 256 x 8: a MoE router row; 5000: longer than the CUDA kernel keeps in registers.
  for (K s : {K{257, 5, 1}, K{257, 5, 5}, K{4096, 2, 40}, K{31, 3, 31}, K{256, 4, 8}, K{5000, 2, 3}}) {
    out.push_back(selection(fmt::format("top_k_f32_k{}_{}x{}_distinct", s.k, s.n, s.rows), Op::TOP_K, [s](In& in) {
      return top_k(in.ctx, in.input(DType::F32, {s.n, s.rows}, Fill::distinct(1e-3)), s.k);
    }));
  }
  out.push_back(selection("top_k_f32_k8_33x9_ties", Op::TOP_K, [](In& in) {
    return top_k(in.ctx, in.input(DType::F32, {33, 9}, Fill::integers(-3, 3)), 8);
  }));
  out.push_back(selection("top_k_f32_k4_permuted_65x3x2", Op::TOP_K, [](In& in) {
    return top_k(in.ctx, permute(in.ctx, in.input(DType::F32, {65, 2, 3}, Fill::distinct(0.01)), 0, 2, 1, 3), 4);
  }));
}

// A MoE router as the model builds it (softmax, top-k, the picked probabilities renormalised);
// the CUDA backend fuses softmax + top_k and get_rows .. div. Token counts around its 8 tokens
// per block. The weights: kNmseF32Sum (a softmax and a sum of k values, then one division).
void add_router(std::vector<OpCase>& out) {
  for (const int64_t T : {1, 4, 9}) {
    out.push_back(selection(fmt::format("router_ids_e256_k8_T{}", T), Op::TOP_K, [T](In& in) {
      Tensor* probs = softmax(in.ctx, in.input(DType::F32, {256, T}, Fill::distinct(1e-3)), nullptr, 1.0f, false);
      return top_k(in.ctx, probs, 8);
    }));
    push(out, fmt::format("router_weights_e256_k8_T{}", T), Op::DIV, kNmseF32Sum, [T](In& in) {
      Tensor* probs = softmax(in.ctx, in.input(DType::F32, {256, T}, Fill::distinct(1e-3)), nullptr, 1.0f, false);
      Tensor* ids = top_k(in.ctx, probs, 8);
      Tensor* w = reshape(in.ctx, get_rows(in.ctx, reshape(in.ctx, probs, {1, 256, T}), ids), {8, T});
      return div(in.ctx, w, sum_rows(in.ctx, w));
    });
  }
}

// The MoE's weighted sum of its experts' rows as the model builds it (the CUDA backend fuses the
// MUL, PERMUTE and SUM_ROWS): kNmseF32Sum (k products summed). The "_all" result reads the
// products again, so their stores are checked too.
void add_weighted_sum(std::vector<OpCase>& out) {
  for (const int64_t T : {1, 3}) {
    for (const bool all : {false, true}) {
      push(out, fmt::format("moe_weighted_sum_h40_k8_T{}{}", T, all ? "_all" : ""), Op::SUM_ROWS, kNmseF32Sum,
           [T, all](In& in) {
             Tensor* prod = mul(in.ctx, in.input(DType::F32, {40, 8, T}), in.input(DType::F32, {1, 8, T}));
             Tensor* y = reshape(in.ctx, sum_rows(in.ctx, permute(in.ctx, prod, 1, 0, 2, 3)), {40, T});
             return all ? add(in.ctx, prod, reshape(in.ctx, y, {40, 1, T})) : y;
           });
    }
  }
}

void add_sum_rows(std::vector<OpCase>& out) {
  // kNmseF32Sum: an f32 sum of the row.
  push(out, "sum_rows_f32_33x7x3", Op::SUM_ROWS, kNmseF32Sum, [](In& in) {
    return sum_rows(in.ctx, in.input(DType::F32, {33, 7, 3}));
  });
  push(out, "sum_rows_f32_4096x3", Op::SUM_ROWS, kNmseF32Sum, [](In& in) {
    return sum_rows(in.ctx, in.input(DType::F32, {4096, 3}));
  });
  push(out, "sum_rows_f32_transposed_33x5", Op::SUM_ROWS, kNmseF32Sum, [](In& in) {
    return sum_rows(in.ctx, transpose(in.ctx, in.input(DType::F32, {5, 33})));
  });
  push(out, "sum_rows_f32_transposed_8x300", Op::SUM_ROWS, kNmseF32Sum, [](In& in) {  // short strided rows
    return sum_rows(in.ctx, transpose(in.ctx, in.input(DType::F32, {300, 8})));
  });
  push(out, "sum_rows_f16_65x3", Op::SUM_ROWS, kNmseF32Sum, [](In& in) {  // f16 in, f32 out
    return sum_rows(in.ctx, in.input(DType::F16, {65, 3}));
  });
}

}  // namespace

std::string compare_indices(const RefArray& got, const RefArray& want) {
  const std::string why = compare_exact(got, want);
  return why.empty() ? why : "indices differ: " + why;
}

std::vector<OpCase> reduce_cases() {
  std::vector<OpCase> out;
  add_norm(Op::RMS_NORM, out);
  add_norm(Op::L2_NORM, out);
  add_argmax(out);
  add_top_k(out);
  add_router(out);
  add_weighted_sum(out);
  add_sum_rows(out);
  return out;
}

}  // namespace gl::test
