// session_test.cpp - speculative decoding with the MTP head: greedy parity and acceptance.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/restricted_backend.h"
#include "fixture.h"
#include "ggml-lite/cpu.h"
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
