// cuda_model_test.cpp - the Qwen3.5 trunk and MTP session on the CUDA backend (GPU machine only):
// logits against transformers and against the CPU backend (F32 and BF16 weights), greedy
// continuation, and MTP greedy parity. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/session.h"
#include "gguf-tools/quantize.h"

#ifdef GL_HAVE_CUDA
#include "ggml-lite/cuda.h"

namespace gl::test {
namespace {

class CudaModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    fx_ = &model_fixture(GetParam());
    gpu_ = cuda::make_backend();
    auto m = qwen35::Model::load(fx_->gguf, *gpu_);
    ASSERT_TRUE(m.ok()) << m.error();
    model_ = std::move(*m);
  }
  std::vector<int32_t> generate(int k, int n) {
    return session_tokens(*model_, *gpu_, {.n_ctx = 512, .n_batch = 8, .mtp_k = k, .kv_bucket = 64}, fx_->prompt, n);
  }
  const ModelFixture* fx_ = nullptr;
  std::unique_ptr<Backend> gpu_;
  std::unique_ptr<qwen35::Model> model_;
};

TEST_P(CudaModelTest, LogitsMatchTransformers) {
  qwen35::Runner r(*model_, *gpu_, 256, 64);
  std::vector<int32_t> rows(fx_->prompt.size());
  std::iota(rows.begin(), rows.end(), 0);
  auto logits = r.eval(fx_->prompt, rows);
  ASSERT_TRUE(logits.ok()) << logits.error();
  const double err = rel_error(*logits, fx_->tensor("logits"));
  std::printf("[ metric   ] cuda %s: all-position logits, max relative error %.3g\n", GetParam().c_str(), err);
  EXPECT_LT(err, 1e-3);
}

// All-position logits of the fixture's prompt on a backend, weights from path.
std::vector<float> prompt_logits(const ModelFixture& fx, const std::string& path, Backend& backend) {
  auto m = qwen35::Model::load(path, backend);
  EXPECT_TRUE(m.ok()) << m.error();
  if (!m.ok()) return {};
  qwen35::Runner r(**m, backend, 256, 64);
  std::vector<int32_t> rows(fx.prompt.size());
  std::iota(rows.begin(), rows.end(), 0);
  auto logits = r.eval(fx.prompt, rows);
  EXPECT_TRUE(logits.ok()) << logits.error();
  return logits.ok() ? *logits : std::vector<float>{};
}

// The bar: CUDA against the CPU reference on the same weights, relative error below 1e-3
// with F32 weights and below 2e-2 with BF16 weights (cuBLAS rounds prefill activations to BF16).
TEST_P(CudaModelTest, LogitsMatchCpuInF32AndBf16) {
  auto cpu = cpu::make_backend({.n_threads = 2});
  std::string bf16 = fx_->gguf;
  bf16.replace(bf16.rfind("-f32.gguf"), 9, "-bf16.gguf");
  auto q = tools::quantize_file({.input = fx_->gguf, .output = bf16, .type = DType::BF16});
  ASSERT_TRUE(q.ok()) << q.error();
  for (const auto& [path, bound] : {std::pair{fx_->gguf, 1e-3}, std::pair{bf16, 2e-2}}) {
    const std::vector<float> want = prompt_logits(*fx_, path, *cpu);
    const std::vector<float> got = prompt_logits(*fx_, path, *gpu_);
    ASSERT_FALSE(want.empty() || got.empty());
    const double err = rel_error(got, want);
    std::printf("[ metric   ] cuda vs cpu %s (%s): all-position logits, max relative error %.3g\n", GetParam().c_str(),
                path == bf16 ? "bf16" : "f32", err);
    EXPECT_LT(err, bound) << path;
  }
}

TEST_P(CudaModelTest, GreedyAndMtpParity) {
  const std::vector<int32_t> plain = generate(0, 64);
  EXPECT_TRUE(std::equal(fx_->greedy.begin(), fx_->greedy.end(), plain.begin())) << "cuda greedy vs transformers";
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(generate(k, 64), plain) << "K = " << k;
}

// With an F16 KV cache (RunConfig::kv_type) on the device: greedy MTP parity K = 1..3 holds, and
// plain greedy decoding gives the tokens it gives with the F32 cache on these fixtures.
TEST_P(CudaModelTest, F16KvCacheGreedyAndMtpParity) {
  const qwen35::RunConfig cfg{.n_ctx = 512, .n_batch = 8, .kv_bucket = 64};
  EXPECT_EQ(f16_kv_tokens_with_mtp_parity(*model_, *gpu_, cfg, fx_->prompt, 64), generate(0, 64)) << "F16 vs F32 cache";
}

// Prefill over an exact causal span (no mask) equals the masked one on the device too: the F32 cache
// takes flash_attn_rows.cu, the F16 cache the tensor cores (flash_attn_mma.cu).
TEST_P(CudaModelTest, CausalSpanEqualsMaskedSpan) {
  expect_causal_span_equals_masked(*model_, *gpu_, fx_->prompt, fx_->greedy.front(), DType::F32);
  expect_causal_span_equals_masked(*model_, *gpu_, fx_->prompt, fx_->greedy.front(), DType::F16);
}

GL_INSTANTIATE_FOR_FIXTURES(CudaModelTest);

}  // namespace
}  // namespace gl::test
#endif  // GL_HAVE_CUDA
