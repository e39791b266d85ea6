// qwen35_test.cpp - the Qwen3.5 trunk on the CPU against transformers (float32 fixtures).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/runner.h"

namespace gl::test {
namespace {

std::vector<int32_t> iota_rows(size_t n) {
  std::vector<int32_t> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

int32_t argmax(const float* row, int64_t n) { return static_cast<int32_t>(std::max_element(row, row + n) - row); }

class Qwen35Test : public FixtureModelTest {
 protected:
  void SetUp() override {
    FixtureModelTest::SetUp();
    n_vocab_ = model_->hparams().n_vocab;
  }
  int64_t n_vocab_ = 0;
};

// Logits for every prompt position, from one prefill, match transformers.
TEST_P(Qwen35Test, PrefillLogitsMatchTransformers) {
  qwen35::Runner r(*model_, *cpu_, 256, 64);
  auto logits = r.eval(fx_->prompt, iota_rows(fx_->prompt.size()));
  ASSERT_TRUE(logits.ok()) << logits.error();
  const double err = rel_error(*logits, fx_->tensor("logits"));
  std::printf("[ metric   ] %s: all-position logits, max relative error %.3g\n", GetParam().c_str(), err);
  EXPECT_LT(err, 1e-4) << "relative error of all-position logits";
}

// Each layer's output (the residual stream) matches transformers' decoder layer outputs.
TEST_P(Qwen35Test, LayerOutputsMatchTransformers) {
  qwen35::Cache cache(*model_, 64, *cpu_);
  const int T = static_cast<int>(fx_->prompt.size());
  qwen35::StepGraph g =
      qwen35::build_step(*model_, cache, {.n_tokens = T, .n_kv = 64, .n_outputs = T, .hidden_all = true});
  const int n_layer = model_->hparams().n_layer;
  std::vector<Tensor*> outs;
  for (int il = 0; il < n_layer; ++il) {
    // the last layer's output is the pre-norm hidden state the MTP head taps
    Tensor* t = il == n_layer - 1 ? g.hidden : g.ctx->find("l_out-" + std::to_string(il));
    ASSERT_NE(t, nullptr);
    t->flags |= TENSOR_OUTPUT;  // keep it readable after compute
    outs.push_back(t);
  }
  Executor ex({cpu_.get()});
  ASSERT_TRUE(ex.allocate(g.graph).ok());
  const std::vector<int32_t> rows = iota_rows(T);
  qwen35::fill_step_inputs(g, ex, fx_->prompt.data(), 0, rows.data());
  ASSERT_TRUE(ex.compute(g.graph).ok());
  for (int il = 0; il < n_layer; ++il) {
    std::vector<float> got(static_cast<size_t>(nelements(*outs[il])));
    ex.get_output(*outs[il], got.data());
    EXPECT_LT(rel_error(got, fx_->tensor("layer_out." + std::to_string(il))), 1e-4) << "layer " << il;
  }
}

// 32 greedy tokens, decoding one at a time after the prefill, equal transformers' continuation.
TEST_P(Qwen35Test, GreedyContinuationMatches) {
  qwen35::Runner r(*model_, *cpu_, 256, 64);
  const int32_t last = static_cast<int32_t>(fx_->prompt.size()) - 1;
  auto logits = r.eval(fx_->prompt, std::vector<int32_t>{last});
  ASSERT_TRUE(logits.ok()) << logits.error();
  std::vector<int32_t> out;
  int32_t tok = argmax(logits->data(), n_vocab_);
  for (size_t i = 0; i < fx_->greedy.size(); ++i) {
    out.push_back(tok);
    if (out.size() == fx_->greedy.size()) break;
    auto next = r.eval(std::vector<int32_t>{tok}, std::vector<int32_t>{0});
    ASSERT_TRUE(next.ok()) << next.error();
    tok = argmax(next->data(), n_vocab_);
  }
  EXPECT_EQ(out, fx_->greedy);
}

// Decoding token by token after a prefill gives the logits of a prefill over the whole sequence.
TEST_P(Qwen35Test, DecodeAfterPrefillEqualsFullPrefill) {
  std::vector<int32_t> seq = fx_->prompt;
  seq.insert(seq.end(), fx_->greedy.begin(), fx_->greedy.begin() + 8);
  const size_t n_prompt = fx_->prompt.size();
  qwen35::Runner full(*model_, *cpu_, 256, 64);
  auto all = full.eval(seq, iota_rows(seq.size()));
  ASSERT_TRUE(all.ok()) << all.error();

  qwen35::Runner inc(*model_, *cpu_, 256, 64);
  ASSERT_TRUE(inc.eval(std::span(seq).first(n_prompt), std::vector<int32_t>{0}).ok());
  for (size_t i = n_prompt; i < seq.size(); ++i) {
    auto step = inc.eval(std::span(seq).subspan(i, 1), std::vector<int32_t>{0});
    ASSERT_TRUE(step.ok()) << step.error();
    const std::vector<float> want(all->begin() + static_cast<long>(i * n_vocab_),
                                  all->begin() + static_cast<long>((i + 1) * n_vocab_));
    EXPECT_LT(rel_error(*step, want), 1e-5) << "position " << i;
  }
}

// A prompt prefilled in chunks of 7 gives the one-shot result.
TEST_P(Qwen35Test, ChunkedPrefillEqualsOneShot) {
  const std::vector<int32_t>& p = fx_->prompt;
  qwen35::Runner once(*model_, *cpu_, 256, 64);
  auto want = once.eval(p, std::vector<int32_t>{static_cast<int32_t>(p.size()) - 1});
  ASSERT_TRUE(want.ok());
  qwen35::Runner chunked(*model_, *cpu_, 256, 64);
  std::vector<float> got;
  for (size_t i = 0; i < p.size(); i += 7) {
    const size_t n = std::min<size_t>(7, p.size() - i);
    auto l = chunked.eval(std::span(p).subspan(i, n), std::vector<int32_t>{static_cast<int32_t>(n) - 1});
    ASSERT_TRUE(l.ok()) << l.error();
    got = *l;
  }
  EXPECT_LT(rel_error(got, *want), 1e-5);
}

// A prefill chunk whose mask would be large (a wide KV bucket here; deep in a long context in use)
// runs over its exact span with causal attention and no mask, giving the masked step's bits.
TEST_P(Qwen35Test, CausalSpanEqualsMaskedSpan) {
  ASSERT_GT(static_cast<int>(fx_->prompt.size()), qwen35::kCausalMinTokens);
  expect_causal_span_equals_masked(*model_, *cpu_, fx_->prompt, fx_->greedy.front(), DType::F32);
  expect_causal_span_equals_masked(*model_, *cpu_, fx_->prompt, fx_->greedy.front(), DType::F16);
}

// Rolling a verify step back to each accepted row restores exactly the state that decoding only
// the accepted tokens produces: the next token's logits are bit-identical.
TEST_P(Qwen35Test, VerifyRollbackRestoresState) {
  const std::vector<int32_t>& p = fx_->prompt;
  const std::vector<int32_t> block(fx_->greedy.begin(), fx_->greedy.begin() + 4);  // K + 1 = 4 rows
  for (int keep = 1; keep <= 4; ++keep) {
    qwen35::Runner spec(*model_, *cpu_, 256, 64);
    ASSERT_TRUE(spec.eval(p, std::vector<int32_t>{0}).ok());
    ASSERT_TRUE(spec.eval(block, iota_rows(4), {.keep_states = true}).ok());
    ASSERT_TRUE(spec.rollback(keep).ok());

    qwen35::Runner plain(*model_, *cpu_, 256, 64);
    ASSERT_TRUE(plain.eval(p, std::vector<int32_t>{0}).ok());
    for (int i = 0; i < keep; ++i)
      ASSERT_TRUE(plain.eval(std::span(block).subspan(i, 1), std::vector<int32_t>{0}).ok());

    const qwen35::Hparams& hp = model_->hparams();
    for (int il = 0; il < hp.n_layer; ++il) {
      if (!hp.is_recurrent(il)) continue;
      for (auto pick : {&qwen35::Cache::state, &qwen35::Cache::conv}) {
        const Tensor* a = (spec.cache().*pick)[il];
        const Tensor* b = (plain.cache().*pick)[il];
        EXPECT_EQ(0, std::memcmp(a->data, b->data, nbytes(*a))) << "layer " << il << " keep " << keep;
      }
    }
    const int32_t next = fx_->greedy[4];
    auto a = spec.eval(std::vector<int32_t>{next}, std::vector<int32_t>{0});
    auto b = plain.eval(std::vector<int32_t>{next}, std::vector<int32_t>{0});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << "keep " << keep;
  }
}

GL_INSTANTIATE_FOR_FIXTURES(Qwen35Test);

}  // namespace
}  // namespace gl::test
