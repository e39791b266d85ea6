// cases_layout.cpp - GET_ROWS, SET_ROWS, CONCAT, the view ops (through CONT), CONT casts and CPY.
#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;
using Build = std::function<Tensor*(In&)>;

std::string tname(DType t) { return std::string(dtype_name(t)); }

// Rounding bound of storing exact values in t (exact for f32).
double store_nmse(DType t) {
  switch (t) {
    case DType::F16: return kNmseF16Out;
    case DType::BF16: return kNmseBf16Out;
    case DType::Q8_0: return kNmseQ8Out;
    case DType::F32:
    case DType::I32:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: break;  // only read here (get_rows), never stored
  }
  return kExact;
}

void push(std::vector<OpCase>& out, std::string name, Op op, double nmse, Build build) {
  out.push_back({.name = std::move(name), .op = op, .build = std::move(build), .max_nmse = nmse});
}

void add_get_rows(std::vector<OpCase>& out) {
  // kExact: a gather; F16/BF16/Q8_0 rows dequantize exactly to f32 (d * q fits in 24 bits).
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    push(out, "get_rows_" + tname(t) + "_K64_R33_n7", Op::GET_ROWS, kExact, [t](In& in) {
      return get_rows(in.ctx, in.input(t, {64, 33}), in.input(DType::I32, {7}, Fill::ids(33)));
    });
  }
  // The llama.cpp family: a row decodes exactly to the reference dequantizer's floats.
  for (DType t : kQuantFamily) {
    const int64_t k = dtype_traits(t).block_size == 256 ? 512 : 96;
    push(out, fmt::format("get_rows_{}_K{}_R33_n7_b2", tname(t), k), Op::GET_ROWS, kExact, [t, k](In& in) {
      return get_rows(in.ctx, in.input(t, {k, 33, 2}), in.input(DType::I32, {7, 2}, Fill::ids(33)));
    });
  }
  push(out, "get_rows_f32_K31_R9_n5_b3x2", Op::GET_ROWS, kExact, [](In& in) {
    return get_rows(in.ctx, in.input(DType::F32, {31, 9, 3, 2}), in.input(DType::I32, {5, 3, 2}, Fill::ids(9)));
  });
  push(out, "get_rows_i32_K3_R17_n6", Op::GET_ROWS, kExact, [](In& in) {
    return get_rows(in.ctx, in.input(DType::I32, {3, 17}, Fill::integers(-50, 50)),
                    in.input(DType::I32, {6}, Fill::ids(17)));
  });
  push(out, "get_rows_f32_strided_rows_K33_R20_n6", Op::GET_ROWS, kExact, [](In& in) {
    Tensor* a = in.input(DType::F32, {40, 20});
    Tensor* rows = view_2d(in.ctx, a, 33, 20, a->nb[1], 3 * sizeof(float));  // 33 of every 40, from column 3
    return get_rows(in.ctx, rows, in.input(DType::I32, {6}, Fill::ids(20)));
  });
}

void add_set_rows(std::vector<OpCase>& out) {
  // Rows written into an F16/BF16/Q8_0 cache carry that format's rounding; untouched rows stay exact.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    push(out, "set_rows_" + tname(t) + "_K64_R40_n5", Op::SET_ROWS, store_nmse(t), [t](In& in) {
      return set_rows(in.ctx, in.input(t, {64, 40}), in.input(DType::F32, {64, 5}),
                      in.input(DType::I32, {5}, Fill::ids_distinct(40)));
    });
  }
  push(out, "set_rows_f32_K32_R12_n4_b2x3", Op::SET_ROWS, kExact, [](In& in) {
    return set_rows(in.ctx, in.input(DType::F32, {32, 12, 2, 3}), in.input(DType::F32, {32, 4, 2, 3}),
                    in.input(DType::I32, {4, 2, 3}, Fill::ids_distinct(12)));
  });
  // Repeated ids: the last source row with an id is the one written (20 rows into 6: the Vulkan
  // shader checks the later rows 8 at a time).
  push(out, "set_rows_f32_K16_R6_n20_repeated_ids", Op::SET_ROWS, kExact, [](In& in) {
    return set_rows(in.ctx, in.input(DType::F32, {16, 6}), in.input(DType::F32, {16, 20}),
                    in.input(DType::I32, {20}, Fill::ids(6)));
  });
  push(out, "set_rows_f32_from_f16_src", Op::SET_ROWS, kExact, [](In& in) {
    return set_rows(in.ctx, in.input(DType::F32, {33, 9}), in.input(DType::F16, {33, 3}),
                    in.input(DType::I32, {3}, Fill::ids_distinct(9)));
  });
  push(out, "set_rows_f16_transposed_src_K64_R20_n5", Op::SET_ROWS, kNmseF16Out, [](In& in) {
    Tensor* src = transpose(in.ctx, in.input(DType::F32, {5, 64}));
    return set_rows(in.ctx, in.input(DType::F16, {64, 20}), src, in.input(DType::I32, {5}, Fill::ids_distinct(20)));
  });
}

void add_concat(std::vector<OpCase>& out) {
  // kExact: data movement.
  for (int dim = 0; dim < 4; ++dim) {
    push(out, fmt::format("concat_f32_dim{}_7x5x3x2", dim), Op::CONCAT, kExact, [dim](In& in) {
      std::array<int64_t, 4> nb{7, 5, 3, 2};
      nb[static_cast<size_t>(dim)] = 4;
      return concat(in.ctx, in.input(DType::F32, {7, 5, 3, 2}), in.input(DType::F32, {nb[0], nb[1], nb[2], nb[3]}),
                    dim);
    });
  }
  push(out, "concat_f16_dim1_33x3_and_33x5", Op::CONCAT, kExact, [](In& in) {
    return concat(in.ctx, in.input(DType::F16, {33, 3}), in.input(DType::F16, {33, 5}), 1);
  });
  push(out, "concat_i32_dim0_3x5_and_4x5", Op::CONCAT, kExact, [](In& in) {
    return concat(in.ctx, in.input(DType::I32, {3, 5}, Fill::integers(-9, 9)),
                  in.input(DType::I32, {4, 5}, Fill::integers(-9, 9)), 0);
  });
  push(out, "concat_f32_dim2_permuted_a", Op::CONCAT, kExact, [](In& in) {
    Tensor* a = permute(in.ctx, in.input(DType::F32, {5, 7, 3}), 1, 0, 2, 3);  // [7, 5, 3]
    return concat(in.ctx, a, in.input(DType::F32, {7, 5, 4}), 2);
  });
}

// View ops compute nothing; each is covered by materialising it with CONT, and
// the harness also checks the view's strides against the op's meaning.
void add_view_cases(std::vector<OpCase>& out) {
  push(out, "view_cont_f32_3d_strided_offset", Op::VIEW, kExact, [](In& in) {
    Tensor* x = in.input(DType::F32, {10, 8, 6});
    Tensor* v = view_3d(in.ctx, x, 7, 5, 4, x->nb[1], x->nb[2], x->nb[2] + 2 * x->nb[1] + 3 * sizeof(float));
    return cont(in.ctx, v);
  });
  push(out, "view_cont_f32_every_other_row", Op::VIEW, kExact, [](In& in) {
    Tensor* x = in.input(DType::F32, {16, 10});
    return cont(in.ctx, view_2d(in.ctx, x, 16, 5, 2 * x->nb[1], x->nb[1]));
  });
  push(out, "view_cont_f16_1d_offset", Op::VIEW, kExact, [](In& in) {
    return cont(in.ctx, view_1d(in.ctx, in.input(DType::F16, {33, 3}), 37, 11 * 2));
  });
  push(out, "reshape_permute_cont_f32_12x5_to_4x3x5", Op::RESHAPE, kExact, [](In& in) {
    Tensor* r = reshape(in.ctx, in.input(DType::F32, {12, 5}), {4, 3, 5});
    return cont(in.ctx, permute(in.ctx, r, 1, 0, 2, 3));
  });
  push(out, "reshape_transpose_cont_f16_33x6_to_11x3x6", Op::RESHAPE, kExact, [](In& in) {
    Tensor* r = reshape(in.ctx, in.input(DType::F16, {33, 6}), {11, 3, 6});
    return cont(in.ctx, transpose(in.ctx, r));
  });
  const std::array<std::array<int, 4>, 4> perms{{{0, 2, 1, 3}, {2, 1, 0, 3}, {1, 2, 3, 0}, {3, 0, 2, 1}}};
  for (const auto& p : perms) {
    push(out, fmt::format("permute_cont_f32_7x5x3x2_{}{}{}{}", p[0], p[1], p[2], p[3]), Op::PERMUTE, kExact,
         [p](In& in) {
           return cont(in.ctx, permute(in.ctx, in.input(DType::F32, {7, 5, 3, 2}), p[0], p[1], p[2], p[3]));
         });
  }
  push(out, "permute_cont_bf16_33x3x5_1023", Op::PERMUTE, kExact, [](In& in) {
    return cont(in.ctx, permute(in.ctx, in.input(DType::BF16, {33, 3, 5}), 1, 0, 2, 3));
  });
  push(out, "transpose_cont_f32_33x31", Op::TRANSPOSE, kExact, [](In& in) {
    return cont(in.ctx, transpose(in.ctx, in.input(DType::F32, {33, 31})));
  });
  push(out, "transpose_cont_f16_31x7x3", Op::TRANSPOSE, kExact, [](In& in) {
    return cont(in.ctx, transpose(in.ctx, in.input(DType::F16, {31, 7, 3})));
  });
}

void add_copy_cases(std::vector<OpCase>& out) {
  // CONT as a cast: exact to f32, otherwise the destination format's rounding.
  for (DType t : {DType::F16, DType::BF16, DType::Q8_0}) {
    push(out, "cont_f32_to_" + tname(t) + "_transposed_64x5", Op::CONT, store_nmse(t), [t](In& in) {
      return cast(in.ctx, transpose(in.ctx, in.input(DType::F32, {5, 64})), t);
    });
    push(out, "cont_" + tname(t) + "_to_f32_64x5", Op::CONT, kExact, [t](In& in) {
      return cast(in.ctx, in.input(t, {64, 5}), DType::F32);
    });
  }
  push(out, "cont_q8_0_same_type_64x3", Op::CONT, kExact, [](In& in) {
    return cont(in.ctx, in.input(DType::Q8_0, {64, 3}));
  });
  push(out, "cont_f16_to_f32_permuted_33x3x5", Op::CONT, kExact, [](In& in) {
    return cast(in.ctx, permute(in.ctx, in.input(DType::F16, {33, 3, 5}), 0, 2, 1, 3), DType::F32);
  });
  // CPY: src into dst (a view of dst) with the dst format's rounding.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    push(out, "cpy_f32_to_" + tname(t) + "_64x7", Op::CPY, store_nmse(t), [t](In& in) {
      return cpy(in.ctx, in.input(DType::F32, {64, 7}), in.input(t, {64, 7}));
    });
  }
  push(out, "cpy_f16_to_f32_33x7", Op::CPY, kExact, [](In& in) {
    return cpy(in.ctx, in.input(DType::F16, {33, 7}), in.input(DType::F32, {33, 7}));
  });
  push(out, "cpy_bf16_to_f32_33x7", Op::CPY, kExact, [](In& in) {
    return cpy(in.ctx, in.input(DType::BF16, {33, 7}), in.input(DType::F32, {33, 7}));
  });
  push(out, "cpy_f32_transposed_to_f16_33x7", Op::CPY, kNmseF16Out, [](In& in) {
    return cpy(in.ctx, transpose(in.ctx, in.input(DType::F32, {7, 33})), in.input(DType::F16, {33, 7}));
  });
  push(out, "cpy_f32_into_strided_view_33x5", Op::CPY, kExact, [](In& in) {
    Tensor* dst = in.input(DType::F32, {40, 10});
    Tensor* v = view_2d(in.ctx, dst, 33, 5, 2 * dst->nb[1], dst->nb[1] + 3 * sizeof(float));
    return cpy(in.ctx, in.input(DType::F32, {33, 5}), v);
  });
  push(out, "cpy_f32_to_f16_cache_rows_64x3", Op::CPY, kNmseF16Out, [](In& in) {
    Tensor* cache = in.input(DType::F16, {64, 20});
    return cpy(in.ctx, in.input(DType::F32, {64, 3}), view_2d(in.ctx, cache, 64, 3, cache->nb[1], 5 * cache->nb[1]));
  });
  push(out, "cpy_f32_32x6_into_64x3_flat_order", Op::CPY, kExact, [](In& in) {
    return cpy(in.ctx, in.input(DType::F32, {32, 6}), in.input(DType::F32, {64, 3}));
  });
}

}  // namespace

std::vector<OpCase> layout_cases() {
  std::vector<OpCase> out;
  add_get_rows(out);
  add_set_rows(out);
  add_concat(out);
  add_view_cases(out);
  add_copy_cases(out);
  return out;
}

}  // namespace gl::test
