// mtp_test.cpp - the MTP head against the oracle assembled from transformers' layer classes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/mtp.h"
#include "ggml-lite/models/runner.h"

namespace gl::test {
namespace {

using MtpTest = FixtureModelTest;

// Prefill fills the MTP KV for every prompt row; the rows' MTP logits match the oracle:
// row t pairs final_norm(h_t) with embed(x_{t+1}) at position t.
TEST_P(MtpTest, PromptRowsMatchOracle) {
  const int T = static_cast<int>(fx_->prompt.size());
  qwen35::Handoff io(*model_, *cpu_, 64);
  qwen35::MtpCache mc(*model_, 128, *cpu_);
  qwen35::Runner r(*model_, io, 128, 64);
  ASSERT_TRUE(r.eval(fx_->prompt, std::vector<int32_t>{T - 1}, {.hidden_all = true}).ok());

  qwen35::MtpGraph g = qwen35::build_mtp_step(*model_, mc, io, {.n_rows = T - 1, .n_kv = 64, .n_outputs = T - 1});
  g.h_mtp->flags |= TENSOR_OUTPUT;
  Executor& ex = io.executor();
  ASSERT_TRUE(ex.allocate(g.graph).ok());
  qwen35::fill_mtp_inputs(g, ex, fx_->prompt.data() + 1, 0, 0);
  ASSERT_TRUE(ex.compute(g.graph).ok());

  std::vector<float> logits(static_cast<size_t>(nelements(*g.logits)));
  ex.get_output(*g.logits, logits.data());
  const double err = rel_error(logits, fx_->tensor("mtp_logits"));
  std::printf("[ metric   ] %s: MTP logits of %d prompt rows, max relative error %.3g\n", GetParam().c_str(), T - 1,
              err);
  EXPECT_LT(err, 1e-4);
  std::vector<float> h(static_cast<size_t>(nelements(*g.h_mtp)));
  ex.get_output(*g.h_mtp, h.data());
  EXPECT_LT(rel_error(h, fx_->tensor("mtp_hidden")), 1e-4);
}

// The raw-tap variant (A/B) feeds the pre-norm state and so must differ from the oracle.
TEST_P(MtpTest, RawTapDiffersFromNormedOracle) {
  const int T = static_cast<int>(fx_->prompt.size());
  qwen35::Handoff io(*model_, *cpu_, 64);
  qwen35::MtpCache mc(*model_, 128, *cpu_);
  qwen35::Runner r(*model_, io, 128, 64);
  ASSERT_TRUE(r.eval(fx_->prompt, std::vector<int32_t>{T - 1}, {.hidden_all = true}).ok());
  qwen35::MtpGraph g = qwen35::build_mtp_step(
      *model_, mc, io, {.n_rows = T - 1, .n_kv = 64, .n_outputs = T - 1, .tap = qwen35::MtpTap::RAW});
  Executor& ex = io.executor();
  ASSERT_TRUE(ex.allocate(g.graph).ok());
  qwen35::fill_mtp_inputs(g, ex, fx_->prompt.data() + 1, 0, 0);
  ASSERT_TRUE(ex.compute(g.graph).ok());
  std::vector<float> logits(static_cast<size_t>(nelements(*g.logits)));
  ex.get_output(*g.logits, logits.data());
  EXPECT_GT(rel_error(logits, fx_->tensor("mtp_logits")), 1e-2);
}

// The MTP prefill graph writes MTP KV for all prompt rows and runs the LM head on one row only.
TEST_P(MtpTest, PrefillGraphWritesAllRowsHeadsOne) {
  qwen35::Handoff io(*model_, *cpu_, 64);
  qwen35::MtpCache mc(*model_, 128, *cpu_);
  qwen35::MtpGraph g = qwen35::build_mtp_step(*model_, mc, io, {.n_rows = 64, .n_kv = 128, .n_outputs = 1});
  int kv_writes = 0;
  for (const Tensor* n : g.graph.nodes()) {
    if (n->op == Op::SET_ROWS && (n->view_src == mc.k || n->view_src == mc.v)) {
      EXPECT_EQ(n->src[1]->ne[1], 64) << "rows written to " << n->view_src->name;
      ++kv_writes;
    }
    if (n->op == Op::MUL_MAT && n->src[0] == model_->output) {
      EXPECT_EQ(n->ne[1], 1) << "LM head rows";
    }
  }
  EXPECT_EQ(kv_writes, 2);
  EXPECT_EQ(g.logits->ne[1], 1);
}

GL_INSTANTIATE_FOR_FIXTURES(MtpTest);

}  // namespace
}  // namespace gl::test
