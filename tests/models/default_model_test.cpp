// default_model_test.cpp - the embedded trained tiny model: its MTP head really predicts.
//
// models/default/tiny-shakespeare-f16.gguf was trained by training/train_tiny.py; the file
// models/default/tiny-shakespeare.reference.json holds PyTorch's view of it (F16-rounded weights):
// greedy ids, trunk argmax and MTP drafts per row, and the teacher-forced acceptance.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/mtp.h"
#include "ggml-lite/models/session.h"

namespace gl::test {
namespace {

const std::filesystem::path kDir = std::filesystem::path(GL_SOURCE_DIR) / "models" / "default";

class DefaultModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream js(kDir / "tiny-shakespeare.reference.json");
    ASSERT_TRUE(js.good());
    ref_ = nlohmann::json::parse(js);
    cpu_ = cpu::make_backend({.n_threads = 2});
    auto m = qwen35::Model::load((kDir / "tiny-shakespeare-f16.gguf").string(), *cpu_);
    ASSERT_TRUE(m.ok()) << m.error();
    model_ = std::move(*m);
    prompt_ = ref_["prompt_ids"].get<std::vector<int32_t>>();
    greedy_ = ref_["greedy_ids"].get<std::vector<int32_t>>();
  }
  std::vector<int32_t> generate(int k, int n, qwen35::SessionStats* st = nullptr) {
    return session_tokens(*model_, *cpu_, {.n_ctx = 1024, .n_batch = 64, .mtp_k = k}, prompt_, n, st);
  }
  nlohmann::json ref_;
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<qwen35::Model> model_;
  std::vector<int32_t> prompt_, greedy_;
};

// Plain greedy equals PyTorch's continuation, and MTP K = 1..4 equals plain greedy for 256 tokens.
TEST_F(DefaultModelTest, GreedyParity256) {
  const std::vector<int32_t> plain = generate(0, 256);
  EXPECT_TRUE(std::equal(greedy_.begin(), greedy_.end(), plain.begin())) << "engine vs PyTorch greedy";
  for (int k = 1; k <= 4; ++k) EXPECT_EQ(generate(k, 256), plain) << "K = " << k;
}

// The engine's MTP drafts and trunk argmax per row agree with PyTorch, so the engine's
// teacher-forced acceptance equals PyTorch's.
TEST_F(DefaultModelTest, TeacherForcedAcceptanceMatchesPyTorch) {
  std::vector<int32_t> seq = prompt_;
  seq.insert(seq.end(), greedy_.begin(), greedy_.end());
  const int T = static_cast<int>(seq.size()), R = T - 1;
  const int64_t V = model_->hparams().n_vocab;
  qwen35::Handoff io(*model_, *cpu_, T);
  qwen35::MtpCache mc(*model_, 256, *cpu_);
  qwen35::Runner r(*model_, io, 256, 128);
  std::vector<int32_t> rows(static_cast<size_t>(T));
  std::iota(rows.begin(), rows.end(), 0);
  auto trunk = r.eval(seq, rows, {.hidden_all = true});
  ASSERT_TRUE(trunk.ok()) << trunk.error();
  qwen35::MtpGraph g = qwen35::build_mtp_step(*model_, mc, io, {.n_rows = R, .n_kv = 128, .n_outputs = R});
  ASSERT_TRUE(io.executor().allocate(g.graph).ok());
  qwen35::fill_mtp_inputs(g, io.executor(), seq.data() + 1, 0, 0);
  ASSERT_TRUE(io.executor().compute(g.graph).ok());
  std::vector<float> mtp(static_cast<size_t>(nelements(*g.logits)));
  io.executor().get_output(*g.logits, mtp.data());

  const auto& tf = ref_["teacher_forced"];
  const auto want_trunk = tf["trunk_argmax"].get<std::vector<int32_t>>();
  const auto want_draft = tf["mtp_draft_ids"].get<std::vector<int32_t>>();
  const auto margins = tf["mtp_top2_margins"].get<std::vector<double>>();
  ASSERT_EQ(want_draft.size(), static_cast<size_t>(R));
  int agree = 0;
  for (int t = 0; t < R; ++t) {
    const float* tr = trunk->data() + static_cast<size_t>(t) * V;
    const float* dr = mtp.data() + static_cast<size_t>(t) * V;
    const int32_t trunk_top = static_cast<int32_t>(std::max_element(tr, tr + V) - tr);
    const int32_t draft = static_cast<int32_t>(std::max_element(dr, dr + V) - dr);
    EXPECT_EQ(trunk_top, want_trunk[t]) << "trunk row " << t;
    if (margins[t] > 1e-3) {
      EXPECT_EQ(draft, want_draft[t]) << "MTP row " << t;
    }
    if (t + 1 < R) {
      const float* next = trunk->data() + static_cast<size_t>(t + 1) * V;
      agree += draft == static_cast<int32_t>(std::max_element(next, next + V) - next);
    }
  }
  const double acceptance = static_cast<double>(agree) / (R - 1);
  EXPECT_NEAR(acceptance, tf["acceptance_sequence"].get<double>(), 0.02);
}

// Acceptance during generation stays above a floor set from the measured value (61.5% at K = 1,
// 2.2 tokens per round at K = 3 on this prompt, 64 tokens): a broken MTP path falls to ~0.
TEST_F(DefaultModelTest, AcceptanceFloor) {
  qwen35::SessionStats st;
  generate(1, 64, &st);
  EXPECT_GE(st.spec.acceptance(), 0.55) << "K = 1 acceptance";
  generate(3, 64, &st);
  EXPECT_GE(st.spec.acceptance_at(0), 0.60) << "K = 3 first-draft acceptance";
  EXPECT_GE(st.spec.mean_accepted_len(), 1.9) << "K = 3 tokens per round";
}

// Precision::FAST attention (attention_fast.cpp) cuts a decode or verify row's keys into splits of
// 1,024 at fixed positions: past the first split, MTP K = 2 and 3 still emit the tokens of plain
// greedy decoding, over an F32 and an F16 cache, and the text stays the EXACT path's for the first
// 64 tokens (the paths differ by float reassociation only).
TEST_F(DefaultModelTest, FastAttentionKeepsMtpParityPastOneSplit) {
  const std::vector<int32_t> exact = session_tokens(*model_, *cpu_, {.n_ctx = 2048}, prompt_, 64);
  for (DType kv : {DType::F32, DType::F16}) {
    qwen35::RunConfig cfg{.n_ctx = 2048, .precision = Precision::FAST, .kv_type = kv};
    const std::vector<int32_t> plain = session_tokens(*model_, *cpu_, cfg, prompt_, 1300);
    ASSERT_EQ(plain.size(), 1300u);
    if (kv == DType::F32) {
      EXPECT_TRUE(std::equal(exact.begin(), exact.end(), plain.begin())) << "FAST vs EXACT";
    }
    for (int k = 2; k <= 3; ++k) {
      cfg.mtp_k = k;
      EXPECT_EQ(session_tokens(*model_, *cpu_, cfg, prompt_, 1300), plain) << dtype_name(kv) << " K = " << k;
    }
  }
}

}  // namespace
}  // namespace gl::test
