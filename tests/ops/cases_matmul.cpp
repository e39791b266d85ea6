// cases_matmul.cpp - MUL_MAT and MUL_MAT_ID for every weight dtype, odd sizes, batch broadcast, strided operands.
#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;

// CPU: weights of every dtype decode exactly to f32 and x stays f32, so every
// weight type shares the f32 dot-product bound.
constexpr double kNmseCpu = kNmseF32Sum;

// Device backends may round x to the weight's format for tensor cores or int8
// dot products (as ggml-cuda does), adding that format's rounding of x.
double device_nmse(DType w) {
  switch (w) {
    case DType::F16: return kNmseF16Out;    // x rounded to f16
    case DType::BF16: return kNmseBf16Out;  // x rounded to bf16
    case DType::Q8_0: return kNmseQ8Out;    // x quantized to 8 bits per block of 32
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
    case DType::MXFP4: return kNmseF16Out;  // cuBLAS rows: weights dequantized to f16 tiles (GEMV: f32)
    case DType::F32:
    case DType::I32: break;
  }
  return kNmseF32Sum;
}

// The CPU under Precision::FAST: Q4_0, Q8_0, Q4_K, Q5_K and Q6_K weights multiply activation rows
// quantized to int8 per block (32 elements for the first two, 256 for the K-quants), d = max|x| / 127,
// so each activation is off by at most d / 2 = max|x_block| / 254 and the weights are exact. With
// independent rounding errors, NMSE ~ (d^2 / 12) / mean(x^2); here |x| is in [0.1, 1] (max ~1, mean
// x^2 ~0.37), so ~1.4e-5: the bound of one Q8_0 rounding (kNmseQ8Out, 7x margin). Other types keep
// their exact row under FAST. CUDA under FAST rounds the activations of its Q8_0 / Q4_K / Q5_K / Q6_K GEMV
// rows the same way (blocks of 32), within the same bound (OpCase::threshold). BF16 weights under
// FAST multiply activations rounded to BF16 (round to nearest even: relative error <= 2^-9, NMSE
// of the products ~(2^-9)^2 / 3 ~ 1.3e-6) with exact products summed in float: kNmseBf16Out.
double fast_nmse(DType w) {
  switch (w) {
    case DType::Q4_0:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return kNmseQ8Out;
    case DType::BF16: return kNmseBf16Out;
    case DType::F32:
    case DType::F16:
    case DType::I32:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: break;
  }
  return kNmseCpu;
}

std::string tname(DType t) { return std::string(dtype_name(t)); }

OpCase mm(DType wt, std::string shape, std::function<Tensor*(In&)> build) {
  return {.name = "mul_mat_" + tname(wt) + "_" + shape,
          .op = Op::MUL_MAT,
          .build = std::move(build),
          .max_nmse = kNmseCpu,
          .max_nmse_device = device_nmse(wt),
          .max_nmse_fast = fast_nmse(wt)};
}

void add_mul_mat_cases(DType wt, std::vector<OpCase>& out) {
  // Q8_0 rows hold whole blocks of 32.
  const int64_t k = wt == DType::Q8_0 ? 96 : 65;
  out.push_back(mm(wt, fmt::format("K{}_N33_M5", k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {k, 33}), in.input(DType::F32, {k, 5}));
  }));
  // A prefill chunk: 37 rows span several row tiles of a device kernel (Vulkan: 8 rows), the last partial.
  out.push_back(mm(wt, fmt::format("K{}_N20_M37_prefill", k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {k, 20}), in.input(DType::F32, {k, 37}));
  }));
  // Prefill on a tiled GEMM (Vulkan: 64 x 64 output tiles, k in slabs of 32): K, N and M not
  // multiples of the tile, M over two tiles, and a K of several slabs with a partial last one.
  const int64_t long_k = wt == DType::Q8_0 ? 320 : 300;
  out.push_back(mm(wt, fmt::format("K{}_N70_M130_prefill_tiles", long_k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {long_k, 70}), in.input(DType::F32, {long_k, 130}));
  }));
  // Few output tiles over a long K (Vulkan tensor cores: K split into parts of 384 summed in a
  // second pass, the last part short), also with batches.
  const int64_t split_k = wt == DType::Q8_0 ? 1568 : 1544;
  out.push_back(mm(wt, fmt::format("K{}_N32_M40_split_k", split_k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {split_k, 32}), in.input(DType::F32, {split_k, 40}));
  }));
  out.push_back(mm(wt, fmt::format("K{}_N20_M24_w2x1_x2x1_split_k", split_k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {split_k, 20, 2, 1}), in.input(DType::F32, {split_k, 24, 2, 1}));
  }));
  out.push_back(mm(wt, "K64_N9_M12_w2x1_x6x3_prefill", [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {64, 9, 2, 1}), in.input(DType::F32, {64, 12, 6, 3}));
  }));
  out.push_back(mm(wt, "K256_N65_M1", [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {256, 65}), in.input(DType::F32, {256, 1}));
  }));
  // Decode and verify over enough weight rows for blocks of rows (Vulkan: 2 rows per work group from
  // 512 rows on), the last block partial.
  for (const int64_t m : {1, 3}) {
    out.push_back(mm(wt, fmt::format("K256_N1031_M{}", m), [=](In& in) {
      return mul_mat(in.ctx, in.input(wt, {256, 1031}), in.input(DType::F32, {256, m}));
    }));
  }
  // w batches [2, 1] broadcast over x batches [6, 3]: x batch b2 uses w batch b2 / 3.
  out.push_back(mm(wt, "K64_N9_M5_w2x1_x6x3", [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {64, 9, 2, 1}), in.input(DType::F32, {64, 5, 6, 3}));
  }));
  // x with permuted batch/row dims (rows contiguous, dims 1 and 2 swapped in memory).
  out.push_back(mm(wt, "K64_N17_M7x3_permuted_x", [=](In& in) {
    Tensor* x = permute(in.ctx, in.input(DType::F32, {64, 3, 7}), 0, 2, 1, 3);
    return mul_mat(in.ctx, in.input(wt, {64, 17, 3}), x);
  }));
}

void add_mul_mat_f32_only(std::vector<OpCase>& out) {
  // Long accumulation: K = 4096 (still within kNmseF32Sum's sqrt(K) bound).
  out.push_back(mm(DType::F32, "K4096_N17_M3", [](In& in) {
    return mul_mat(in.ctx, in.input(DType::F32, {4096, 17}), in.input(DType::F32, {4096, 3}));
  }));
  // A router-like product past the GEMV's rows: CUDA's tiled F32 kernel (32 x 32 tiles, K steps of
  // 64, the last partial), with partial tiles on every side.
  out.push_back(mm(DType::F32, "K300_N130_M70", [](In& in) {
    return mul_mat(in.ctx, in.input(DType::F32, {300, 130}), in.input(DType::F32, {300, 70}));
  }));
  // A decode row longer than one pass of a GEMV work group (Vulkan: 641 chunks of 8 = 128
  // invocations x 4 unrolled, then a partial pass): BF16, as the model's weights.
  out.push_back(mm(DType::BF16, "K5128_N9_M3", [](In& in) {
    return mul_mat(in.ctx, in.input(DType::BF16, {5128, 9}), in.input(DType::F32, {5128, 3}));
  }));
  // x transposed: its elements along K are M floats apart.
  out.push_back(mm(DType::F32, "K65_N31_M5_transposed_x", [](In& in) {
    Tensor* x = transpose(in.ctx, in.input(DType::F32, {5, 65}));
    return mul_mat(in.ctx, in.input(DType::F32, {65, 31}), x);
  }));
  out.push_back(mm(DType::F32, "K65_N31_M20_transposed_x_prefill", [](In& in) {
    Tensor* x = transpose(in.ctx, in.input(DType::F32, {20, 65}));
    return mul_mat(in.ctx, in.input(DType::F32, {65, 31}), x);
  }));
  out.push_back(mm(DType::F32, "K33_N31_M4_transposed_w", [](In& in) {
    Tensor* w = transpose(in.ctx, in.input(DType::F32, {31, 33}));
    return mul_mat(in.ctx, w, in.input(DType::F32, {33, 4}));
  }));
}

// The model's decode patterns that CUDA launches as one GEMV with an epilogue: a product read by a
// run of elementwise nodes. Each result also reads the product (or an earlier step) again, so the
// fused kernel's stores of the intermediate nodes are checked too. BF16 weights, as in the model.
void add_mul_mat_chain_cases(std::vector<OpCase>& out) {
  const DType wt = DType::BF16;
  out.push_back(mm(wt, "K256_N32_M1_then_sigmoid", [=](In& in) {
    Tensor* p = mul_mat(in.ctx, in.input(wt, {256, 32}), in.input(DType::F32, {256, 1}));
    return add(in.ctx, sigmoid(in.ctx, p), p);
  }));
  // GDN decay gate: softplus(p + dt_bias) * A, bias and A broadcast over the rows (verify: M = 4).
  out.push_back(mm(wt, "K256_N32_M4_then_add_softplus_mul", [=](In& in) {
    Tensor* p = mul_mat(in.ctx, in.input(wt, {256, 32}), in.input(DType::F32, {256, 4}));
    Tensor* sp = softplus(in.ctx, add(in.ctx, p, in.input(DType::F32, {32})));
    return add(in.ctx, mul(in.ctx, sp, in.input(DType::F32, {32})), sp);
  }));
  // The GDN's two gates back to back, narrow products of one input (CUDA: one launch for both):
  // softplus(a + dt_bias) * A, then sigmoid(b), at decode and verify rows.
  // Q4_K too: under FAST its products take int8 activations.
  for (const DType t : {wt, DType::Q4_K}) {
    for (const int64_t m : {1, 4}) {
      out.push_back(mm(t, fmt::format("K256_N32_M{}_twin_gates", m), [=](In& in) {
        Tensor* x = in.input(DType::F32, {256, m});
        Tensor* a = mul_mat(in.ctx, in.input(t, {256, 32}), x);
        Tensor* g =
            mul(in.ctx, softplus(in.ctx, add(in.ctx, a, in.input(DType::F32, {32}))), in.input(DType::F32, {32}));
        Tensor* beta = sigmoid(in.ctx, mul_mat(in.ctx, in.input(t, {256, 32}), x));
        return add(in.ctx, g, beta);
      }));
    }
  }
  // FFN: swiglu(gate, up) right after the up projection (the chain value is swiglu's second operand).
  for (const int64_t m : {1, 3}) {
    out.push_back(mm(wt, fmt::format("K512_N96_M{}_gate_up_then_swiglu", m), [=](In& in) {
      Tensor* x = in.input(DType::F32, {512, m});
      Tensor* gate = mul_mat(in.ctx, in.input(wt, {512, 96}), x);
      Tensor* up = mul_mat(in.ctx, in.input(wt, {512, 96}), x);
      return add(in.ctx, swiglu(in.ctx, gate, up), up);
    }));
  }
}

// An FFN's gate and up products of one input and their swiglu (CUDA launches the three as one GEMV
// pair): MoE experts for 1 and 3 tokens (each slot its own GEMV), then the 2-D form at M = 1 and 4.
// The "_all" results read gate and up again, so their stores are checked too; the others leave the
// swiglu free to take gate's memory.
void add_ffn_pair_cases(DType wt, int64_t k, std::vector<OpCase>& out) {
  for (const int64_t t : {1, 3}) {
    for (const bool all : {false, true}) {
      out.push_back(
          {.name = fmt::format("mul_mat_id_{}_K{}_N40_E6_U2_T{}_gate_up_swiglu{}", tname(wt), k, t, all ? "_all" : ""),
           .op = Op::MUL_MAT_ID,
           .build =
               [=](In& in) {
                 Tensor* x = in.input(DType::F32, {k, 1, t});
                 Tensor* ids = in.input(DType::I32, {2, t}, Fill::ids_distinct(6));
                 Tensor* gate = mul_mat_id(in.ctx, in.input(wt, {k, 40, 6}), x, ids);
                 Tensor* up = mul_mat_id(in.ctx, in.input(wt, {k, 40, 6}), x, ids);
                 Tensor* act = swiglu(in.ctx, gate, up);
                 return all ? add(in.ctx, add(in.ctx, act, up), gate) : act;
               },
           .max_nmse = kNmseCpu,
           .max_nmse_device = device_nmse(wt),
           .max_nmse_fast = fast_nmse(wt)});
    }
  }
  for (const int64_t m : {1, 4}) {
    out.push_back(mm(wt, fmt::format("K{}_N40_M{}_gate_up_swiglu_all", k, m), [=](In& in) {
      Tensor* x = in.input(DType::F32, {k, m});
      Tensor* gate = mul_mat(in.ctx, in.input(wt, {k, 40}), x);
      Tensor* up = mul_mat(in.ctx, in.input(wt, {k, 40}), x);
      return add(in.ctx, add(in.ctx, swiglu(in.ctx, gate, up), up), gate);
    }));
  }
}

// The llama.cpp quant family (exact on the CPU: weights decoded by the reference dequantizer, F32
// activations). K covers whole blocks: 3 blocks of 32 (a partial decode chunk) or 2 super-blocks
// of 256. M = 1 and 3 read the weights in place, M = 7 converts them into scratch first.
void add_quant_family_cases(DType wt, std::vector<OpCase>& out) {
  const int64_t k = dtype_traits(wt).block_size == 256 ? 512 : 96;
  for (const int64_t m : {1, 3, 7}) {
    out.push_back(mm(wt, fmt::format("K{}_N33_M{}", k, m), [=](In& in) {
      return mul_mat(in.ctx, in.input(wt, {k, 33}), in.input(DType::F32, {k, m}));
    }));
  }
  out.push_back(mm(wt, fmt::format("K{}_N9_M5_w2x1_x6x3", k), [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {k, 9, 2, 1}), in.input(DType::F32, {k, 5, 6, 3}));
  }));
  out.push_back({.name = fmt::format("mul_mat_id_{}_K{}_N17_E4_U2_T3", tname(wt), k),
                 .op = Op::MUL_MAT_ID,
                 .build =
                     [=](In& in) {
                       Tensor* experts = in.input(wt, {k, 17, 4});
                       Tensor* x = in.input(DType::F32, {k, 1, 3});
                       Tensor* ids = in.input(DType::I32, {2, 3}, Fill::ids_distinct(4));
                       return mul_mat_id(in.ctx, experts, x, ids);
                     },
                 .max_nmse = kNmseCpu,
                 .max_nmse_device = device_nmse(wt),
                 .max_nmse_fast = fast_nmse(wt)});
}

// mul_mat_id over 100 tokens, 2 of 3 experts each: ~67 slots per expert, so the tensor-core path
// (CUDA) has full and partial tiles of 64 slots, and N = 70 a partial tile of weight rows.
void add_many_token_id_case(DType wt, int64_t k, std::vector<OpCase>& out) {
  out.push_back({.name = fmt::format("mul_mat_id_{}_K{}_N70_E3_U2_T100", tname(wt), k),
                 .op = Op::MUL_MAT_ID,
                 .build =
                     [=](In& in) {
                       Tensor* experts = in.input(wt, {k, 70, 3});
                       Tensor* x = in.input(DType::F32, {k, 1, 100});
                       Tensor* ids = in.input(DType::I32, {2, 100}, Fill::ids_distinct(3));
                       return mul_mat_id(in.ctx, experts, x, ids);
                     },
                 .max_nmse = kNmseCpu,
                 .max_nmse_device = device_nmse(wt),
                 .max_nmse_fast = fast_nmse(wt)});
}

// The device paths of the same family: GEMV with 2 and 4 rows (verify), many weight rows (blocks of
// 8 or 4 rows with a partial last block) and a long K (several warps per row), prefill rows on the
// tensor cores (M = 64 and 130), and mul_mat_id with more tokens than the direct path takes (expert tiles).
void add_quant_family_device_cases(DType wt, std::vector<OpCase>& out) {
  const int64_t k = dtype_traits(wt).block_size == 256 ? 512 : 96;
  for (const int64_t m : {2, 4, 64, 130}) {  // 130: two full tensor-core tiles and a partial one
    out.push_back(mm(wt, fmt::format("K{}_N33_M{}", k, m), [=](In& in) {
      return mul_mat(in.ctx, in.input(wt, {k, 33}), in.input(DType::F32, {k, m}));
    }));
  }
  for (const int64_t m : {1, 4}) {
    out.push_back(mm(wt, fmt::format("K256_N2203_M{}", m), [=](In& in) {
      return mul_mat(in.ctx, in.input(wt, {256, 2203}), in.input(DType::F32, {256, m}));
    }));
  }
  out.push_back(mm(wt, "K4096_N9_M1", [=](In& in) {
    return mul_mat(in.ctx, in.input(wt, {4096, 9}), in.input(DType::F32, {4096, 1}));
  }));
  out.push_back({.name = fmt::format("mul_mat_id_{}_K{}_N17_E4_U2_T12", tname(wt), k),
                 .op = Op::MUL_MAT_ID,
                 .build =
                     [=](In& in) {
                       Tensor* experts = in.input(wt, {k, 17, 4});
                       Tensor* x = in.input(DType::F32, {k, 2, 12});  // expert slot u reads row u
                       Tensor* ids = in.input(DType::I32, {2, 12}, Fill::ids_distinct(4));
                       return mul_mat_id(in.ctx, experts, x, ids);
                     },
                 .max_nmse = kNmseCpu,
                 .max_nmse_device = device_nmse(wt),
                 .max_nmse_fast = fast_nmse(wt)});
  add_many_token_id_case(wt, k, out);
  // Three 256-element blocks a row: the CUDA tiles' two block buffers (RawStage) both refilled.
  if (dtype_traits(wt).block_size == 256) add_many_token_id_case(wt, 768, out);
}

// mul_mat_id of 8 experts [K, 33] over 5 tokens, 4 experts each; x1 activation rows a token.
OpCase mul_mat_id_case(DType wt, int64_t k, int64_t x1, const std::string& shape) {
  return {.name = "mul_mat_id_" + tname(wt) + "_" + shape,
          .op = Op::MUL_MAT_ID,
          .build =
              [=](In& in) {
                Tensor* experts = in.input(wt, {k, 33, 8});
                Tensor* x = in.input(DType::F32, {k, x1, 5});
                Tensor* ids = in.input(DType::I32, {4, 5}, Fill::ids_distinct(8));  // 4 of 8 experts per token
                return mul_mat_id(in.ctx, experts, x, ids);
              },
          .max_nmse = kNmseCpu,
          .max_nmse_device = device_nmse(wt),
          .max_nmse_fast = fast_nmse(wt)};
}

void add_mul_mat_id_cases(DType wt, std::vector<OpCase>& out) {
  // Every chosen expert reads the token's one row (gate/up); expert slot u reads row u (down).
  out.push_back(mul_mat_id_case(wt, 64, 1, "K64_N33_E8_U4_T5_shared_x"));
  out.push_back(mul_mat_id_case(wt, 64, 4, "K64_N33_E8_U4_T5_row_per_expert"));
  add_many_token_id_case(wt, 64, out);
}

// Q8_0 decode and verify products at model-like K (16-byte aligned rows, K % 256 == 0; each GEMV
// thread of a K = 5120 row takes 5 chunks, the last round partial at K = 2304): products with one
// and five activation rows (the last block of weight rows partial), experts and the gate/up pair.
void add_q8_0_long_k_cases(std::vector<OpCase>& out) {
  constexpr DType wt = DType::Q8_0;
  for (const int64_t k : {5120, 2304}) {
    for (const int64_t m : {1, 5}) {
      out.push_back(mm(wt, fmt::format("K{}_N67_M{}_long_k", k, m), [=](In& in) {
        return mul_mat(in.ctx, in.input(wt, {k, 67}), in.input(DType::F32, {k, m}));
      }));
    }
  }
  out.push_back(mul_mat_id_case(wt, 2304, 4, "K2304_N33_E8_U4_T5_long_k"));
  add_ffn_pair_cases(wt, 2304, out);
}

// Q8_0 prefill products at model-like K, under EXACT within the CPU's f32 bound on every backend
// (not the int8 one): CUDA's cuBLAS path carries the weights' F16 residue as a third GEMM, and its
// tensor-core kernel (matmul_q8_mma.cu: quants as F16 operands, each block's d on its partial
// sums; only where its tiles fill the device, so Q8_0Prefill.FullTilesMatchTheCpu in
// matmul_fast_test.cpp covers it) the activations' residue. FAST keeps cuBLAS on F16-rounded
// weights: OpCase::threshold allows kDeviceFastNmse. Shapes: M of one, two and three 64-row tiles
// (partial), N a partial tile (odd: a lone last column) and several tiles, K % 256 == 0.
void add_q8_0_prefill_cases(std::vector<OpCase>& out) {
  constexpr DType wt = DType::Q8_0;
  struct Shape {
    int64_t k, n, m;
  };
  for (const Shape sh : {Shape{2304, 67, 40}, Shape{5120, 67, 130}, Shape{1024, 300, 200}, Shape{4096, 257, 64}}) {
    OpCase c = mm(wt, fmt::format("K{}_N{}_M{}_prefill_exact", sh.k, sh.n, sh.m), [=](In& in) {
      return mul_mat(in.ctx, in.input(wt, {sh.k, sh.n}), in.input(DType::F32, {sh.k, sh.m}));
    });
    c.max_nmse_device = kNmseCpu;
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<OpCase> matmul_cases() {
  std::vector<OpCase> out;
  for (DType wt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) add_mul_mat_cases(wt, out);
  add_mul_mat_f32_only(out);
  add_mul_mat_chain_cases(out);
  for (DType wt : {DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::IQ4_NL})
    add_ffn_pair_cases(wt, dtype_traits(wt).block_size == 256 ? 256 : 96, out);
  add_q8_0_long_k_cases(out);
  add_q8_0_prefill_cases(out);
  for (DType wt : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) add_mul_mat_id_cases(wt, out);
  for (DType wt : kQuantFamily) add_quant_family_cases(wt, out);
  for (DType wt : kQuantFamily) add_quant_family_device_cases(wt, out);
  return out;
}

}  // namespace gl::test
