// cases_attention.cpp - SOFTMAX (scale, mask, causal with n_kv > n_q, strided scores), FLASH_ATTN and ROPE
// (NEOX/NORMAL, partial n_dims).
#include <cmath>

#include <fmt/format.h>

#include "ops/cases.h"

namespace gl::test {
namespace {

using In = CaseInputs;

// exp and a row sum per element: a few f32 roundings plus a sum of <= 4096 terms.
constexpr double kNmseSoftmax = kNmseF32Sum;
// The CPU computes angles, sin and cos in double and rounds once: f32 output rounding only.
constexpr double kNmseRope = kNmseF32;
// Device kernels may form the angle p * base^(-2i/n) in f32: off by ~p * 2^-24 rad for p < 4096, NMSE ~1e-8.
constexpr double kNmseRopeDevice = 1e-6;

void add_softmax(std::vector<OpCase>& out) {
  const Fill scores = Fill::nonzero(0.1, 8.0);
  auto c = [&](std::string name, double nmse, std::function<Tensor*(In&)> build) {
    out.push_back({.name = "softmax_" + name, .op = Op::SOFTMAX, .build = std::move(build), .max_nmse = nmse});
  };
  c("f32_33x7x3_scale", kNmseSoftmax, [=](In& in) {
    return softmax(in.ctx, in.input(DType::F32, {33, 7, 3}, scores), nullptr, 0.125f, false);
  });
  c("f32_40x7x3_mask", kNmseSoftmax, [=](In& in) {
    Tensor* mask = in.input(DType::F32, {40, 7}, Fill::mask(0.25));  // a quarter -inf, column 0 never
    return softmax(in.ctx, in.input(DType::F32, {40, 7, 3}, scores), mask, 0.25f, false);
  });
  c("f32_40x7x3_causal", kNmseSoftmax, [=](In& in) {
    return softmax(in.ctx, in.input(DType::F32, {40, 7, 3}, scores), nullptr, 0.25f, true);
  });
  c("f32_65x5x2x2_causal_mask", kNmseSoftmax, [=](In& in) {
    Tensor* mask = in.input(DType::F32, {65, 5}, Fill::mask(0.1));
    return softmax(in.ctx, in.input(DType::F32, {65, 5, 2, 2}, scores), mask, 0.5f, true);
  });
  c("f32_33x7x3_permuted_causal", kNmseSoftmax, [=](In& in) {
    Tensor* a = permute(in.ctx, in.input(DType::F32, {7, 33, 3}, scores), 1, 0, 2, 3);  // [33, 7, 3], nb[0] = 28
    return softmax(in.ctx, a, nullptr, 0.125f, true);
  });
  c("f32_4096x2", kNmseSoftmax, [=](In& in) {
    return softmax(in.ctx, in.input(DType::F32, {4096, 2}, scores), nullptr, 1.0f, false);
  });
  c("f16_33x5x2_causal", kNmseF16Out, [=](In& in) {  // the result is f16
    return softmax(in.ctx, in.input(DType::F16, {33, 5, 2}, scores), nullptr, 0.125f, true);
  });
}

// FLASH_ATTN: a dot product of Dk <= 256 terms, exponentials and sums over <= 2500 keys, all in
// f32: the f32 sum bound. Shapes: decode and verify rows against a span cut into many splits, GQA,
// spans read as views of a KV cache (the model's layout), prefill rows, causal rows with no key
// (zeros), Dv != Dk and f16 caches.
struct AttnShape {
  int64_t dk, dv, heads, kv_heads, tokens, keys;
};

Tensor* attn_input(In& in, DType t, AttnShape s, bool cache_view, bool k_side) {
  const int64_t d = k_side ? s.dk : s.dv;
  if (!cache_view) return in.input(t, {d, s.kv_heads, s.keys});
  // Rows of a [d Hkv, capacity] cache, the span its first `keys` rows.
  Tensor* cache = in.input(t, {d * s.kv_heads, s.keys + 7});
  return view_3d(in.ctx, cache, d, s.kv_heads, s.keys, cache->nb[0] * d, cache->nb[1], 0);
}

void add_flash_attn(std::vector<OpCase>& out) {
  auto c = [&](std::string name, AttnShape s, DType kv, bool mask, bool causal, bool cache_view, bool stair = false) {
    out.push_back({.name = "flash_attn_" + name,
                   .op = Op::FLASH_ATTN,
                   .build =
                       [=](In& in) {
                         Tensor* q = in.input(DType::F32, {s.dk, s.heads, s.tokens});
                         Tensor* k = attn_input(in, kv, s, cache_view, true);
                         Tensor* v = attn_input(in, kv, s, cache_view, false);
                         Tensor* m = mask ? in.input(DType::F32, {s.keys, s.tokens},
                                                     stair ? Fill::stair_mask(0.25) : Fill::mask(0.25))
                                          : nullptr;
                         const float scale = 1.0f / std::sqrt(static_cast<float>(s.dk));
                         return flash_attn(in.ctx, q, k, v, m, scale, causal);
                       },
                   .max_nmse = kNmseF32Sum});
  };
  c("f32_D64_H4_kv2_T1_N40_mask", {64, 64, 4, 2, 1, 40}, DType::F32, true, false, false);
  c("f32_D256_H16_kv4_T1_N300_cache_mask", {256, 256, 16, 4, 1, 300}, DType::F32, true, false, true);
  c("f32_D256_H16_kv4_T4_N300_cache_mask", {256, 256, 16, 4, 4, 300}, DType::F32, true, false, true);
  c("f32_D256_H8_kv2_T1_N2000_cache", {256, 256, 8, 2, 1, 2000}, DType::F32, false, false, true);
  c("f32_D128_H4_kv4_T33_N33_causal", {128, 128, 4, 4, 33, 33}, DType::F32, false, true, false);
  c("f32_D128_H4_kv2_T40_N45_causal_mask", {128, 128, 4, 2, 40, 45}, DType::F32, true, true, true);
  c("f32_D64_H2_kv1_T7_N5_causal_empty_rows", {64, 64, 2, 1, 7, 5}, DType::F32, false, true, false);
  c("f32_D64_Dv32_H3_kv1_T2_N70", {64, 32, 3, 1, 2, 70}, DType::F32, false, false, false);
  c("f16_D128_H4_kv2_T3_N100_mask", {128, 128, 4, 2, 3, 100}, DType::F16, true, false, false);
  // Longer spans: verify rows over an F16 cache cut into key splits (CPU FAST), and prefill rows
  // of a 4-head group over a long causal span in one piece.
  c("f16_D64_H4_kv2_T3_N2500_cache_mask", {64, 64, 4, 2, 3, 2500}, DType::F16, true, false, true);
  c("f32_D64_H8_kv2_T40_N1500_causal", {64, 64, 8, 2, 40, 1500}, DType::F32, false, true, false);
  // Prefill rows over an F16 cache (CUDA: tensor cores): the Qwen3.5 head size with its GQA group
  // and a masked span longer than a tile; GQA group 1 (64 tokens a block) and 3 (blocks cut
  // through a token's heads); causal rows with no key; a span that ends inside a tile.
  c("f16_D256_H16_kv4_T40_N700_cache_mask", {256, 256, 16, 4, 40, 700}, DType::F16, true, false, true);
  c("f16_D256_H16_kv4_T40_N700_cache_stair_mask", {256, 256, 16, 4, 40, 700}, DType::F16, true, false, true, true);
  c("f16_D64_H2_kv2_T70_N300_causal", {64, 64, 2, 2, 70, 300}, DType::F16, false, true, false);
  c("f16_D128_H6_kv2_T33_N97_causal_mask", {128, 128, 6, 2, 33, 97}, DType::F16, true, true, true);
  c("f16_D64_H2_kv1_T12_N5_causal_empty_rows", {64, 64, 2, 1, 12, 5}, DType::F16, false, true, false);
  // Decode and verify rows over an F16 cache in several key splits (CUDA: 256 keys a split on the
  // tensor cores, then the merge): the 35B-A3B's head size and GQA group 8, the 9B's group 4, and
  // a span with no mask.
  c("f16_D256_H16_kv2_T1_N600_cache_mask", {256, 256, 16, 2, 1, 600}, DType::F16, true, false, true);
  c("f16_D256_H16_kv2_T4_N1100_cache_stair_mask", {256, 256, 16, 2, 4, 1100}, DType::F16, true, false, true, true);
  c("f16_D256_H16_kv4_T1_N520", {256, 256, 16, 4, 1, 520}, DType::F16, false, false, true);
  c("f16_D64_H4_kv2_T3_N2500_cache", {64, 64, 4, 2, 3, 2500}, DType::F16, false, false, true);
  // Prefill rows with values wider than Vulkan's tiled kernel holds (flash_attn.comp there).
  c("f32_D64_Dv288_H2_kv1_T12_N20_causal_mask", {64, 288, 2, 1, 12, 20}, DType::F32, true, true, false);
}

struct RopeShape {
  int64_t d, n_dims, heads, tokens;
};

OpCase rope_case(std::string name, RopeMode mode, RopeShape s, DType t, float base, float freq_scale, bool permuted_x,
                 int64_t max_pos) {
  const double nmse = t == DType::F16 ? kNmseF16Out : kNmseRope;
  const double device = t == DType::F16 ? kNmseF16Out : kNmseRopeDevice;
  return {.name = "rope_" + name,
          .op = Op::ROPE,
          .build =
              [=](In& in) {
                Tensor* x = permuted_x ? permute(in.ctx, in.input(t, {s.d, s.tokens, s.heads}), 0, 2, 1, 3)
                                       : in.input(t, {s.d, s.heads, s.tokens});
                Tensor* pos = in.input(DType::I32, {s.tokens}, Fill::ids(max_pos));
                return rope(in.ctx, x, pos, static_cast<int>(s.n_dims), base, mode, freq_scale);
              },
          .max_nmse = nmse,
          .max_nmse_device = device};
}

void add_rope(std::vector<OpCase>& out) {
  const auto neox = RopeMode::NEOX, normal = RopeMode::NORMAL;
  // Qwen3.5 shape: 64 rotated dims of a 256-dim head, base 1e7.
  out.push_back(rope_case("neox_f32_D256_n64_H3_T5", neox, {256, 64, 3, 5}, DType::F32, 1e7f, 1.0f, false, 4096));
  out.push_back(rope_case("normal_f32_D256_n64_H5_T4", normal, {256, 64, 5, 4}, DType::F32, 1e7f, 1.0f, false, 4096));
  out.push_back(
      rope_case("neox_f32_D128_full_H2_T7_fs0p5", neox, {128, 128, 2, 7}, DType::F32, 1e4f, 0.5f, false, 4096));
  out.push_back(
      rope_case("normal_f32_D64_n32_H3_T3_permuted_x", normal, {64, 32, 3, 3}, DType::F32, 1e4f, 1.0f, true, 4096));
  out.push_back(rope_case("neox_f32_D96_n96_H1_T1", neox, {96, 96, 1, 1}, DType::F32, 1e4f, 1.0f, false, 4096));
  out.push_back(rope_case("neox_f16_D128_n64_H3_T5", neox, {128, 64, 3, 5}, DType::F16, 1e7f, 1.0f, false, 4096));
  // Long-context positions: double angles keep the CPU tight; f32 angles at p ~ 3e5 are off by up to 2e-2 rad.
  OpCase far =
      rope_case("neox_f32_D256_n64_H2_T3_pos_300k", neox, {256, 64, 2, 3}, DType::F32, 1e7f, 1.0f, false, 300000);
  far.max_nmse_device = 1e-3;
  out.push_back(std::move(far));
}

}  // namespace

std::vector<OpCase> attention_cases() {
  std::vector<OpCase> out;
  add_softmax(out);
  add_flash_attn(out);
  add_rope(out);
  return out;
}

}  // namespace gl::test
