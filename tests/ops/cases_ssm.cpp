// cases_ssm.cpp - SSM_CONV (on concat(state, x), as the model feeds it) and GATED_DELTA_RULE.
#include <cmath>

#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;

// Kc products summed per output: a few f32 roundings.
constexpr double kNmseConv = kNmseF32;
// f32 state recurrence (or a chunked form with a triangular solve) with unit-norm keys, decays
// exp(g) <= exp(-0.02) and beta < 1, so errors fade within ~100 tokens however long the input:
// relative error ~1e-5 at worst, NMSE <~ 1e-10.
constexpr double kNmseGdr = 1e-8;

void add_ssm_conv(std::vector<OpCase>& out) {
  auto c = [&](std::string name, int64_t ch, int64_t kc, int64_t t, bool with_state) {
    out.push_back(
        {.name = "ssm_conv_" + name,
         .op = Op::SSM_CONV,
         .build =
             [=](In& in) {
               Tensor* w = in.input(DType::F32, {kc, ch});
               if (!with_state) return ssm_conv(in.ctx, in.input(DType::F32, {ch, kc - 1 + t}), w);
               Tensor* xs = concat(in.ctx, in.input(DType::F32, {ch, kc - 1}), in.input(DType::F32, {ch, t}), 1);
               return ssm_conv(in.ctx, xs, w);
             },
         .max_nmse = kNmseConv});
  };
  c("f32_C65_K4_T1_concat_state", 65, 4, 1, true);  // decode: one new column after the carried window
  c("f32_C65_K4_T7_concat_state", 65, 4, 7, true);
  c("f32_C33_K4_T5", 33, 4, 5, false);
  // The GDN input path, concat -> ssm_conv -> silu (CUDA: one kernel); the result reads the conv and
  // the window again, so the fused stores of every node are checked.
  for (const int64_t t : {1, 2, 6}) {
    out.push_back(
        {.name = fmt::format("ssm_conv_f32_C96_K4_T{}_window_conv_silu", t),
         .op = Op::SSM_CONV,
         .build =
             [=](In& in) {
               Tensor* window = concat(in.ctx, in.input(DType::F32, {96, 3}), in.input(DType::F32, {96, t}), 1);
               Tensor* conv = ssm_conv(in.ctx, window, in.input(DType::F32, {4, 96}));
               Tensor* act = add(in.ctx, silu(in.ctx, conv), conv);
               return concat(in.ctx, act, window, 1);
             },
         .max_nmse = kNmseConv});
  }
  c("f32_C31_K3_T6", 31, 3, 6, false);
}

struct GdrShape {
  int64_t dk, dv, hk, hv, t;
  int n_states;
  DType qkv = DType::F32;  // of q, k and v
};

// Model-like inputs: unit-norm keys, queries scaled by 1/sqrt(Dk), g <= 0, beta in (0, 1).
OpCase gdr_case(GdrShape s) {
  std::string name =
      fmt::format("gated_delta_rule_T{}_Hk{}_Hv{}_Dk{}_Dv{}_s{}", s.t, s.hk, s.hv, s.dk, s.dv, s.n_states);
  if (s.qkv != DType::F32) name += fmt::format("_qkv_{}", dtype_name(s.qkv));
  return {.name = name,
          .op = Op::GATED_DELTA_RULE,
          .build =
              [s](In& in) {
                Tensor* q = in.input(s.qkv, {s.dk, s.hk, s.t}, Fill::unit_rows(1.0 / std::sqrt(double(s.dk))));
                Tensor* k = in.input(s.qkv, {s.dk, s.hk, s.t}, Fill::unit_rows(1.0));
                Tensor* v = in.input(s.qkv, {s.dv, s.hv, s.t});
                Tensor* g = in.input(DType::F32, {s.hv, s.t}, Fill::range(-1.0, -0.02));
                Tensor* beta = in.input(DType::F32, {s.hv, s.t}, Fill::range(0.05, 0.95));
                Tensor* state = in.input(DType::F32, {s.dv, s.dk, s.hv}, Fill::nonzero(0.01, 0.1));
                return gated_delta_rule(in.ctx, q, k, v, g, beta, state, s.n_states).node;
              },
          .max_nmse = kNmseGdr};
}

// q, k, v as strided views of one fused [2*Hk*Dk + Hv*Dv, T] conv output (as the model slices them);
// small values keep |k|^2 < 1 so the recurrence stays contractive without normalising.
OpCase gdr_fused_views_case(int64_t t, int n_states) {
  return {.name = fmt::format("gated_delta_rule_T{}_fused_qkv_views_s{}", t, n_states),
          .op = Op::GATED_DELTA_RULE,
          .build =
              [t, n_states](In& in) {
                const int64_t dk = 32, dv = 32, hk = 2, hv = 4, ch = 2 * hk * dk + hv * dv;
                Tensor* qkv = in.input(DType::F32, {ch, t}, Fill::nonzero(0.02, 0.25));
                const size_t f = sizeof(float), row = qkv->nb[1];
                Tensor* q = view_3d(in.ctx, qkv, dk, hk, t, dk * f, row, 0);
                Tensor* k = view_3d(in.ctx, qkv, dk, hk, t, dk * f, row, hk * dk * f);
                Tensor* v = view_3d(in.ctx, qkv, dv, hv, t, dv * f, row, 2 * hk * dk * f);
                Tensor* g = in.input(DType::F32, {hv, t}, Fill::range(-1.0, -0.02));
                Tensor* beta = in.input(DType::F32, {hv, t}, Fill::range(0.05, 0.95));
                Tensor* state = in.input(DType::F32, {dv, dk, hv}, Fill::nonzero(0.01, 0.1));
                return gated_delta_rule(in.ctx, q, k, v, g, beta, state, n_states).node;
              },
          .max_nmse = kNmseGdr};
}

void add_gdr(std::vector<OpCase>& out) {
  // T = 1 (decode), 5 (verify), 16 and up (a backend may switch to a chunked form; 64/65/130 sit
  // around a 64-token chunk size); Hv = 2 Hk.
  for (int64_t t : {1, 5, 16, 64, 65, 130}) out.push_back(gdr_case({32, 32, 2, 4, t, 1}));
  for (int64_t t : {5, 65, 130}) out.push_back(gdr_case({32, 32, 2, 4, t, 4}));
  out.push_back(gdr_case({128, 128, 2, 2, 65, 1}));  // Qwen3.5 head size, Hv == Hk
  out.push_back(gdr_case({64, 32, 1, 3, 5, 4}));     // Dk != Dv, Hv = 3 Hk
  // Odd head sizes, F32, token by token with snapshots: on CUDA, rows past Dk in a warp's slice
  // and idle lanes in a head's last column block.
  out.push_back(gdr_case({40, 72, 3, 3, 5, 4}));
  out.push_back(gdr_fused_views_case(9, 4));
  // Chunked forms (n_states 1, T >= 64 on CUDA): one full chunk, a partial last chunk, several
  // chunks at the Qwen3.5 head size with Hv = 2 Hk, odd head sizes with Hv = Hk, strided views.
  out.push_back(gdr_case({128, 128, 2, 4, 64, 1}));
  out.push_back(gdr_case({128, 128, 2, 4, 100, 1}));
  out.push_back(gdr_case({128, 128, 2, 4, 200, 1}));
  out.push_back(gdr_case({40, 72, 3, 3, 77, 1}));
  out.push_back(gdr_fused_views_case(100, 1));
  out.push_back(gdr_case({256, 32, 1, 1, 70, 1}));   // the largest Dk the CUDA kernels take
  out.push_back(gdr_case({16, 16, 1, 2, 1100, 1}));  // long: CUDA runs it in passes of 1024 tokens
  // 16-bit q, k and v (Vulkan's chunked form has a separate shader for F32 ones).
  out.push_back(gdr_case({128, 128, 2, 4, 100, 1, DType::F16}));
  out.push_back(gdr_case({40, 72, 3, 3, 77, 1, DType::BF16}));
}

}  // namespace

std::vector<OpCase> ssm_cases() {
  std::vector<OpCase> out;
  add_ssm_conv(out);
  add_gdr(out);
  return out;
}

}  // namespace gl::test
