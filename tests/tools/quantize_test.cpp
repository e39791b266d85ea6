// quantize_test.cpp - gguf-quantize: which tensors become Q8_0, the Q8_0 error bound, copied
// tensors byte for byte (including types ggml-lite cannot compute with), keys and sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gguf-tools/convert.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/quantize.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

std::string convert_f32(const std::string& fixture, const std::string& out) {
  ConvertOptions o;
  o.model_dir = fixture_dir(fixture);
  o.output = out;
  o.outtype = DType::F32;
  Result<ConvertReport> r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error();
  return out;
}

TEST(Quantize, Q8_0WithinTheFormatBound) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-dense-tiny", dir + "/f32.gguf"), out = dir + "/q8_0.gguf";
  Result<QuantizeReport> r = quantize_file({.input = in, .output = out, .type = DType::Q8_0});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_LT(r->bytes_out, r->bytes_in / 2);
  EXPECT_EQ(r->bytes_out, read_bytes(out).size());
  EXPECT_EQ(r->bytes_in, read_bytes(in).size());
  Result<GgufFile> a = GgufFile::open(in), b = GgufFile::open(out);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->get<uint32_t>("general.file_type").value(), 7u);
  EXPECT_EQ(b->get<uint32_t>("general.quantization_version").value(), 2u);
  EXPECT_EQ(b->get<std::string>("tokenizer.ggml.pre").value(), "qwen2");
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  size_t n_q = 0;
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const GgufTensorInfo &x = a->tensors()[i], &y = b->tensors()[i];
    ASSERT_EQ(x.name, y.name);
    EXPECT_EQ(x.ne, y.ne);
    const bool want_q = !keep_f32(x.name, static_cast<int>(x.n_dims)) && x.ne[0] % 32 == 0;
    EXPECT_EQ(y.ggml_type, want_q ? dtype_traits(DType::Q8_0).ggml_type : x.ggml_type) << x.name;
    if (!want_q) {
      ASSERT_EQ(x.nbytes, y.nbytes);
      EXPECT_EQ(std::memcmp(x.data, y.data, x.nbytes), 0) << x.name;
      continue;
    }
    ++n_q;
    const std::vector<float> src = gguf_floats(x), deq = gguf_floats(y);
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(y.data);
    for (size_t blk = 0; blk < src.size() / 32; ++blk) {
      float amax = 0;
      for (size_t k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(src[blk * 32 + k]));
      const float d = fp16_to_fp32(blocks[blk].d);
      // Half a step of the stored scale, plus the error of rounding amax/127 to fp16.
      const float bound = d / 2 + 127.0f * std::fabs(amax / 127.0f - d) + 1e-6f * amax;
      for (size_t k = 0; k < 32; ++k)
        ASSERT_LE(std::fabs(src[blk * 32 + k] - deq[blk * 32 + k]), bound) << x.name << " block " << blk;
    }
  }
  EXPECT_EQ(n_q, r->n_converted);
  EXPECT_NE(b->find_tensor("token_embd.weight")->ggml_type, 0u);  // embeddings are quantized too
  EXPECT_EQ(b->find_tensor("blk.0.ssm_conv1d.weight")->ggml_type, 0u);
}

TEST(Quantize, ToBf16ThenBackKeepsCopiedTensors) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-moe-tiny", dir + "/f32.gguf");
  Result<QuantizeReport> r = quantize_file({.input = in, .output = dir + "/bf16.gguf", .type = DType::BF16});
  ASSERT_TRUE(r.ok()) << r.error();
  Result<GgufFile> b = GgufFile::open(dir + "/bf16.gguf");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->get<uint32_t>("general.file_type").value(), 32u);
  EXPECT_FALSE(b->has("general.quantization_version"));
  EXPECT_EQ(b->find_tensor("blk.0.ffn_down_shexp.weight")->dtype(), DType::BF16);  // ne[0] = 48 is fine for bf16
  EXPECT_EQ(b->find_tensor("blk.0.ffn_gate_inp.weight")->dtype(), DType::F32);
}

TEST(Quantize, UnknownTypesAreCopied) {
  const std::string dir = tmp_dir();
  std::vector<uint8_t> q4k(144);  // one q4_K block of 256 elements
  for (size_t i = 0; i < q4k.size(); ++i) q4k[i] = static_cast<uint8_t>(i * 7);
  std::vector<float> w(64 * 2);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<float>(i));
  GgufFile f;
  f.set("general.architecture", "test");
  ASSERT_TRUE(f.add_tensor("a.weight", 12u, std::vector<int64_t>{256}, q4k.data()).ok());
  ASSERT_TRUE(f.add_tensor("b.weight", DType::F32, {64, 2}, w.data()).ok());
  ASSERT_TRUE(f.write(dir + "/in.gguf").ok());
  Result<QuantizeReport> r = quantize_file({.input = dir + "/in.gguf", .output = dir + "/out.gguf"});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->n_converted, 1u);
  EXPECT_EQ(r->n_copied, 1u);
  Result<GgufFile> g = GgufFile::open(dir + "/out.gguf");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->find_tensor("a.weight")->ggml_type, 12u);
  EXPECT_EQ(std::memcmp(g->find_tensor("a.weight")->data, q4k.data(), q4k.size()), 0);
  EXPECT_EQ(g->find_tensor("b.weight")->dtype(), DType::Q8_0);
}

TEST(Quantize, MissingInputIsAnError) {
  Result<QuantizeReport> r = quantize_file({.input = "/nonexistent.gguf", .output = tmp_dir() + "/x.gguf"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent.gguf"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace gl::tools::test
