// session_test.cpp - speculative decoding with the MTP head: greedy parity and acceptance.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "common/restricted_backend.h"
#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/runner.h"
#include "ggml-lite/models/session.h"

namespace gl::test {
namespace {

using SessionTest = FixtureModelTest;

// A cache too large for the device is a clear error from Session::create and Runner::eval, not a
// crash (the backend's alloc_buffer returns nullptr, as CUDA's does when out of memory).
TEST_P(SessionTest, OutOfMemoryForTheCacheIsAnError) {
  RestrictedBackend small(cpu::make_backend({.n_threads = 2}), {});
  small.limit_allocations(size_t{1} << 20);
  auto s = qwen35::Session::create(*model_, small, {.n_ctx = 1 << 16, .mtp_k = 0});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("KV/state cache: out of memory on restricted-cpu"), std::string::npos) << s.error();
  qwen35::Runner r(*model_, small, 1 << 16);
  const std::vector<int32_t> tok{1};
  auto l = r.eval(tok, std::vector<int32_t>{0});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().find("out of memory"), std::string::npos) << l.error();
}

// MTP on emits exactly the tokens of plain greedy decoding, for K = 1..4, with a prompt longer
// than the prefill chunk (29 tokens in chunks of 8).
TEST_P(SessionTest, GreedyParityWithMtp) {
  qwen35::RunConfig cfg{.n_ctx = 512, .n_batch = 8, .kv_bucket = 64};
  const std::vector<int32_t> plain = session_tokens(*model_, *cpu_, cfg, fx_->prompt, 128);
  ASSERT_EQ(plain.size(), 128u);
  EXPECT_TRUE(std::equal(fx_->greedy.begin(), fx_->greedy.end(), plain.begin())) << "plain greedy vs transformers";
  for (int k = 1; k <= 4; ++k) {
    cfg.mtp_k = k;
    qwen35::SessionStats st;
    EXPECT_EQ(session_tokens(*model_, *cpu_, cfg, fx_->prompt, 128, &st), plain) << "K = " << k;
    EXPECT_GT(st.spec.rounds, 0) << "K = " << k;
  }
}

// Adaptive K (RunConfig::mtp_p_min): rounds verify only the drafts whose chained probability
// holds, so greedy output is still plain greedy decoding at any bar; one no draft can meet (1.0)
// leaves every round a one-row verify with nothing drafted.
TEST_P(SessionTest, AdaptiveKKeepsGreedyParity) {
  qwen35::RunConfig cfg{.n_ctx = 512, .n_batch = 8, .kv_bucket = 64};
  const std::vector<int32_t> plain = session_tokens(*model_, *cpu_, cfg, fx_->prompt, 64);
  cfg.mtp_k = 3;
  for (float p_min : {0.05f, 0.3f, 1.0f}) {
    cfg.mtp_p_min = p_min;
    qwen35::SessionStats st;
    EXPECT_EQ(session_tokens(*model_, *cpu_, cfg, fx_->prompt, 64, &st), plain) << "p_min " << p_min;
    const int64_t drafted = std::accumulate(st.spec.drafted.begin(), st.spec.drafted.end(), int64_t{0});
    EXPECT_GT(st.spec.rounds, 0);
    EXPECT_LE(drafted, 3 * st.spec.rounds);
    if (p_min == 1.0f) {
      EXPECT_EQ(drafted, 0) << "a draft met p >= 1";
      EXPECT_EQ(st.spec.emitted, st.spec.rounds) << "a one-row verify emits one token";
    }
  }
}

// An F16 KV cache (RunConfig::kv_type) rounds each K and V value to F16 once (relative error <=
// 2^-11 ~ 4.9e-4 per value, and attention averages over keys): the prompt logits stay within the
// bound a device backend's F32 path gets against the CPU (1e-3; measured 5.4e-5 dense, 4.5e-5
// MoE), and greedy decoding with the MTP head drafting K = 1..3 gives the tokens of plain greedy
// decoding on the same cache type.
constexpr double kF16KvBound = 1e-3;

TEST_P(SessionTest, F16KvCacheStaysCloseAndKeepsMtpParity) {
  std::vector<int32_t> rows(fx_->prompt.size());
  std::iota(rows.begin(), rows.end(), 0);
  qwen35::Runner f32(*model_, *cpu_, 256, 64), f16(*model_, *cpu_, 256, 64, DType::F16);
  auto a = f32.eval(fx_->prompt, rows);
  auto b = f16.eval(fx_->prompt, rows);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.error() : a.error());
  const double err = rel_error(*b, *a);
  std::printf("[ metric   ] %s: F16 vs F32 KV cache, prompt logits max rel error %.3g\n", GetParam().c_str(), err);
  EXPECT_GT(err, 0.0) << "the F16 cache did not round";
  EXPECT_LT(err, kF16KvBound);
  f16_kv_tokens_with_mtp_parity(*model_, *cpu_, {.n_ctx = 512, .n_batch = 8, .kv_bucket = 64}, fx_->prompt, 64);
}

TEST_P(SessionTest, KvTypeOtherThanF32OrF16IsAClearError) {
  auto s = qwen35::Session::create(*model_, *cpu_, {.kv_type = DType::Q8_0});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("kv_type q8_0 is not a KV cache type"), std::string::npos) << s.error();
}

// A GGUF without MTP tensors refuses MTP with a message that says how to run without it.
TEST_P(SessionTest, MtpWithoutMtpTensorsIsAClearError) {
  const auto path = std::filesystem::path(GL_BINARY_DIR) / "test-models" / (GetParam() + "-nomtp.gguf");
  auto f = GgufFile::open(fx_->gguf);
  ASSERT_TRUE(f.ok());
  const std::string arch = *f->get<std::string>("general.architecture");
  GgufFile out;
  for (const GgufKV& kv : f->kvs()) out.set(kv.key, kv.value);
  const int64_t blocks = *f->get_int(arch + ".block_count");
  out.set(arch + ".block_count", GgufValue(static_cast<uint32_t>(blocks - 1)));
  out.set(arch + ".nextn_predict_layers", GgufValue(uint32_t{0}));
  const std::string mtp_prefix = "blk." + std::to_string(blocks - 1) + ".";
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.name.rfind(mtp_prefix, 0) == 0) continue;
    ASSERT_TRUE(out.add_tensor(t.name, t.ggml_type, t.ne, t.data).ok());
  }
  ASSERT_TRUE(out.write(path.string()).ok());
  auto m = qwen35::Model::load(path.string(), *cpu_);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE((*m)->has_mtp());
  auto s = qwen35::Session::create(**m, *cpu_, {.mtp_k = 2});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("no MTP tensors"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("MTP off"), std::string::npos) << s.error();
}

GL_INSTANTIATE_FOR_FIXTURES(SessionTest);

}  // namespace
}  // namespace gl::test
