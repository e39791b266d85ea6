// fixture.h - converted reference fixtures for model tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/models/qwen35.h"
#include "ggml-lite/models/session.h"
#include "gguf-tools/safetensors.h"

namespace gl::test {

struct ModelFixture {
  std::string name;     // "qwen35-dense-tiny"
  std::string gguf;     // converted F32 GGUF
  nlohmann::json meta;  // reference.json
  SafetensorsFile ref;  // reference.safetensors
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
  // Rows of a reference tensor [rows, cols] as floats.
  std::vector<float> tensor(const std::string& name) const;
};

// Converts tests/fixtures/<name> once per process (F32) and loads its reference outputs.
const ModelFixture& model_fixture(const std::string& name);

// n tokens after `prompt` from a fresh Session on `be` with `cfg` (MTP K, precision, ...); a failure
// is a test failure and ends the list early. Fills *stats when given.
std::vector<int32_t> session_tokens(const qwen35::Model& m, Backend& be, const qwen35::RunConfig& cfg,
                                    const std::vector<int32_t>& prompt, int n, qwen35::SessionStats* stats = nullptr);

// n greedy tokens from a Session with cfg on an F16 KV cache (cfg.kv_type and mtp_k are set here),
// after checking that MTP K = 1..3 on the same cache emits the same n tokens.
std::vector<int32_t> f16_kv_tokens_with_mtp_parity(const qwen35::Model& m, Backend& be, qwen35::RunConfig cfg,
                                                   const std::vector<int32_t>& prompt, int n);

// A prefill of the prompt whose mask would be large (a wide KV bucket) runs over its exact span with
// causal attention and no mask: its all-row logits, and the next decode step's, must equal those of
// the masked step over a narrow bucket, bit for bit, on backend be with a kv_type cache.
void expect_causal_span_equals_masked(const qwen35::Model& m, Backend& be, const std::vector<int32_t>& prompt,
                                      int32_t next, DType kv_type);

// max |a - b| / max |b|
double rel_error(const std::vector<float>& a, const std::vector<float>& b);

// A test parameterised by fixture name, with that fixture's model loaded on the CPU backend.
class FixtureModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  const ModelFixture* fx_ = nullptr;
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<qwen35::Model> model_;
};

// Test-name suffix for a fixture: "qwen35-dense-tiny" -> "qwen35_dense_tiny".
std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info);

#define GL_INSTANTIATE_FOR_FIXTURES(suite)                                                             \
  INSTANTIATE_TEST_SUITE_P(Fixtures, suite, ::testing::Values("qwen35-dense-tiny", "qwen35-moe-tiny"), \
                           ::gl::test::fixture_test_name)

}  // namespace gl::test
