// fixture.cpp - converts the committed Hugging Face fixtures with gguf-convert, once per process.
#include "fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "ggml-lite/cpu.h"
#include "gguf-tools/convert.h"

namespace gl::test {

std::vector<float> ModelFixture::tensor(const std::string& tname) const {
  const SafetensorsTensor* t = ref.find(tname);
  GL_ASSERT(t != nullptr, "reference tensor missing");
  std::vector<float> out(static_cast<size_t>(t->nelements()));
  std::memcpy(out.data(), t->data.data(), out.size() * sizeof(float));
  return out;
}

const ModelFixture& model_fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<ModelFixture>> cache;  // test-process lifetime
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;

  const std::filesystem::path dir = std::filesystem::path(GL_SOURCE_DIR) / "tests" / "fixtures" / name;
  const std::filesystem::path out_dir = std::filesystem::path(GL_BINARY_DIR) / "test-models";
  std::filesystem::create_directories(out_dir);
  auto f = std::make_unique<ModelFixture>();
  f->name = name;
  f->gguf = (out_dir / (name + "-f32.gguf")).string();
  tools::ConvertOptions opt;
  opt.model_dir = dir.string();
  opt.output = f->gguf;
  opt.outtype = DType::F32;
  Result<tools::ConvertReport> rep = tools::convert_checkpoint(opt);
  GL_ASSERT(rep.ok(), rep.ok() ? "" : rep.error().c_str());
  std::ifstream js(dir / "reference.json");
  f->meta = nlohmann::json::parse(js);
  Result<SafetensorsFile> ref = SafetensorsFile::open((dir / "reference.safetensors").string());
  GL_ASSERT(ref.ok(), "reference.safetensors");
  f->ref = std::move(*ref);
  f->prompt = f->meta["prompt_ids"].get<std::vector<int32_t>>();
  f->greedy = f->meta["greedy_ids"].get<std::vector<int32_t>>();
  return *cache.emplace(name, std::move(f)).first->second;
}

std::vector<int32_t> session_tokens(const qwen35::Model& m, Backend& be, const qwen35::RunConfig& cfg,
                                    const std::vector<int32_t>& prompt, int n, qwen35::SessionStats* stats) {
  std::vector<int32_t> out;
  auto s = qwen35::Session::create(m, be, cfg);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error());
  if (!s.ok()) return out;
  const Status p = (*s)->prefill(prompt);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
  if (!p.ok()) return out;
  for (int i = 0; i < n; ++i) {
    auto t = (*s)->next();
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
    if (!t.ok()) break;
    out.push_back(*t);
  }
  if (stats) *stats = (*s)->stats();
  return out;
}

std::vector<int32_t> f16_kv_tokens_with_mtp_parity(const qwen35::Model& m, Backend& be, qwen35::RunConfig cfg,
                                                   const std::vector<int32_t>& prompt, int n) {
  cfg.kv_type = DType::F16;
  cfg.mtp_k = 0;
  const std::vector<int32_t> plain = session_tokens(m, be, cfg, prompt, n);
  EXPECT_EQ(plain.size(), static_cast<size_t>(n));
  if (plain.size() != static_cast<size_t>(n)) return plain;
  for (int k = 1; k <= 3; ++k) {
    cfg.mtp_k = k;
    EXPECT_EQ(session_tokens(m, be, cfg, prompt, n), plain) << "F16 KV cache, K = " << k;
  }
  return plain;
}

void expect_causal_span_equals_masked(const qwen35::Model& m, Backend& be, const std::vector<int32_t>& prompt,
                                      int32_t next, DType kv_type) {
  const int n = static_cast<int>(prompt.size()), n_ctx = 65536;
  ASSERT_TRUE(qwen35::attention_span(0, n, n_ctx, n_ctx).causal) << "the wide bucket takes the causal path";
  ASSERT_FALSE(qwen35::attention_span(0, n, n_ctx, 64).causal) << "the narrow bucket keeps the mask";
  qwen35::Runner causal(m, be, n_ctx, n_ctx, kv_type);
  qwen35::Runner masked(m, be, n_ctx, 64, kv_type);
  std::vector<int32_t> rows(prompt.size());
  for (int i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
  auto a = causal.eval(prompt, rows);
  auto b = masked.eval(prompt, rows);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b) << "prefill logits, " << dtype_name(kv_type) << " cache";
  auto da = causal.eval(std::span(&next, 1), std::vector<int32_t>{0});
  auto db = masked.eval(std::span(&next, 1), std::vector<int32_t>{0});
  ASSERT_TRUE(da.ok() && db.ok());
  EXPECT_EQ(*da, *db) << "decode logits after it, " << dtype_name(kv_type) << " cache";
}

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  GL_ASSERT(a.size() == b.size(), "size mismatch");
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::fmax(num, std::fabs(double(a[i]) - b[i]));
    den = std::fmax(den, std::fabs(double(b[i])));
  }
  return num / den;
}

void FixtureModelTest::SetUp() {
  fx_ = &model_fixture(GetParam());
  cpu_ = cpu::make_backend({.n_threads = 2});
  auto m = qwen35::Model::load(fx_->gguf, *cpu_);
  ASSERT_TRUE(m.ok()) << m.error();
  model_ = std::move(*m);
}

std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

}  // namespace gl::test
