// vulkan_model_test.cpp - the Qwen3.5 trunk and MTP session on the Vulkan backend (lavapipe on
// the build machines): logits against transformers and against the CPU backend on the same
// weights, greedy continuation, and MTP greedy parity. Ops Vulkan declines run on the CPU through
// the scheduler's fallback, so this also covers the copies between the two. Skipped without a
// Vulkan device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/session.h"

#ifdef GL_HAVE_VULKAN
#include "ggml-lite/vulkan.h"

namespace gl::test {
namespace {

class VulkanModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (vulkan::devices().empty()) GTEST_SKIP() << "no Vulkan device";
    fx_ = &model_fixture(GetParam());
    auto be = vulkan::make_backend();
    ASSERT_TRUE(be.ok()) << be.error();
    vk_ = std::move(*be);
    auto m = qwen35::Model::load(fx_->gguf, *vk_);
    ASSERT_TRUE(m.ok()) << m.error();
    model_ = std::move(*m);
  }
  std::vector<int32_t> generate(int k, int n) {
    return session_tokens(*model_, *vk_, {.n_ctx = 512, .n_batch = 8, .mtp_k = k, .kv_bucket = 64}, fx_->prompt, n);
  }
  std::vector<float> prompt_logits(const qwen35::Model& m, Backend& be) const {
    qwen35::Runner r(m, be, 256, 64);
    std::vector<int32_t> rows(fx_->prompt.size());
    std::iota(rows.begin(), rows.end(), 0);
    auto logits = r.eval(fx_->prompt, rows);
    EXPECT_TRUE(logits.ok()) << logits.error();
    return logits.ok() ? *logits : std::vector<float>{};
  }
  const ModelFixture* fx_ = nullptr;
  std::unique_ptr<Backend> vk_;
  std::unique_ptr<qwen35::Model> model_;
};

// F32 weights, f32 shaders: the same bar as CUDA's F32 comparison (1e-3 relative).
TEST_P(VulkanModelTest, LogitsMatchTransformersAndCpu) {
  const std::vector<float> got = prompt_logits(*model_, *vk_);
  ASSERT_FALSE(got.empty());
  const double err = rel_error(got, fx_->tensor("logits"));
  std::printf("[ metric   ] vulkan %s: all-position logits vs transformers, max relative error %.3g\n",
              GetParam().c_str(), err);
  EXPECT_LT(err, 1e-3);
  auto cpu = cpu::make_backend({.n_threads = 2});
  auto m = qwen35::Model::load(fx_->gguf, *cpu);
  ASSERT_TRUE(m.ok()) << m.error();
  const double err_cpu = rel_error(got, prompt_logits(**m, *cpu));
  std::printf("[ metric   ] vulkan vs cpu %s: all-position logits, max relative error %.3g\n", GetParam().c_str(),
              err_cpu);
  EXPECT_LT(err_cpu, 1e-3);
}

// 32 tokens (the fixtures' greedy reference is longer; lavapipe is a CPU driver, so CI time).
TEST_P(VulkanModelTest, GreedyAndMtpParity) {
  const std::vector<int32_t> plain = generate(0, 32);
  ASSERT_EQ(plain.size(), 32u);
  ASSERT_GE(fx_->greedy.size(), plain.size());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), fx_->greedy.begin())) << "vulkan greedy vs transformers";
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(generate(k, 32), plain) << "K = " << k;
}

// An F16 KV cache on the device (RunConfig::kv_type; the shaders read F16 K/V rows): greedy
// decoding gives the F32 cache's tokens here, and MTP K = 1..3 gives plain greedy's on it.
TEST_P(VulkanModelTest, F16KvCacheGreedyAndMtpParity) {
  const qwen35::RunConfig cfg{.n_ctx = 512, .n_batch = 8, .kv_bucket = 64};
  EXPECT_EQ(f16_kv_tokens_with_mtp_parity(*model_, *vk_, cfg, fx_->prompt, 32), generate(0, 32)) << "F16 vs F32 cache";
}

GL_INSTANTIATE_FOR_FIXTURES(VulkanModelTest);

}  // namespace
}  // namespace gl::test
#endif  // GL_HAVE_VULKAN
