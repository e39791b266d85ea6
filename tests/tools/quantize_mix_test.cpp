// quantize_mix_test.cpp - gguf-quantize into llama.cpp mixes: types follow the mix policy, values
// stay within each format's error, the output is deterministic, and bad input leaves no file.
#include <gtest/gtest.h>

#include <cmath>

#include "ggml-lite/quants/quants.h"
#include "gguf-tools/convert.h"
#include "gguf-tools/quant_mix.h"
#include "gguf-tools/quantize.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

std::string convert_f32(const std::string& fixture, const std::string& out) {
  Result<ConvertReport> r =
      convert_checkpoint({.model_dir = fixture_dir(fixture), .output = out, .outtype = DType::F32});
  EXPECT_TRUE(r.ok()) << r.error();
  return out;
}

std::vector<float> dequantized(const GgufTensorInfo& t) {
  if (const QuantRef* q = quant_ref_by_ggml_type(t.ggml_type)) {
    std::vector<float> out(static_cast<size_t>(t.nelements()));
    q->to_float(t.data, out.data(), t.nelements());
    return out;
  }
  return gguf_floats(t);
}

// Relative RMS error a format reaches on these random weights, with headroom.
double rmse_bound(uint32_t ggml_type) {
  const std::string n = ggml_type_name(ggml_type);
  if (n == "f16" || n == "bf16") return 1e-2;
  if (n == "q8_0") return 0.01;
  if (n == "q6_K") return 0.04;
  if (n[0] == 'q' && n[1] == '5') return 0.08;
  if (n == "q2_K") return 0.5;
  if (n == "q3_K") return 0.25;
  return 0.16;  // 4-bit formats
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

double relative_rmse(const GgufTensorInfo& src_t, const GgufTensorInfo& q_t) {
  const std::vector<float> src = gguf_floats(src_t), deq = dequantized(q_t);
  double err = 0, ref = 0;
  for (size_t k = 0; k < src.size(); ++k) {
    err += (src[k] - deq[k]) * (src[k] - deq[k]);
    ref += src[k] * src[k];
  }
  return std::sqrt(err / ref);
}

std::string llama_quants(const std::string& name) {
  return (fs::path(GL_SOURCE_DIR) / ".." / "shared" / "fixtures" / "llama-quants" / (name + ".gguf")).string();
}

// An F32 model with the keys, tensor names and shapes of a llama-quantize output, and uniform
// random weights: rows of 256, so the K-quants apply without fallbacks.
Status write_f32_like(const GgufFile& q, const std::string& out) {
  GgufFile f;
  for (const GgufKV& kv : q.kvs()) f.set(kv.key, kv.value);
  f.set("general.file_type", GgufValue(uint32_t{0}));
  f.remove("general.quantization_version");
  std::vector<std::vector<float>> data;
  uint64_t state = 12345;
  for (const GgufTensorInfo& t : q.tensors()) {
    std::vector<float>& v = data.emplace_back(static_cast<size_t>(t.nelements()));
    for (float& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) - 0.5f) * 0.1f;
    }
    GL_TRY(f.add_tensor(t.name, 0, std::span<const int64_t>(t.ne.data(), t.n_dims)));
  }
  for (size_t i = 0; i < data.size(); ++i) GL_TRY(f.set_tensor_data(q.tensors()[i].name, data[i].data()));
  return f.write(out);
}

// End to end: our q4_k_m of an F32 copy of the fixture has exactly llama-quantize's types.
TEST(QuantizeMix, SameTypesAsLlamaQuantizeOnTheFixture) {
  for (const std::string name : {"dense-Q4_K_M", "moe-Q4_K_M"}) {
    const std::string path = llama_quants(name);
    if (!fs::exists(path)) GTEST_SKIP() << "no fixture at " << path;
    const std::string dir = tmp_dir(name);
    Result<GgufFile> q = GgufFile::open(path);
    ASSERT_TRUE(q.ok()) << q.error();
    ASSERT_TRUE(write_f32_like(*q, dir + "/f32.gguf").ok());
    Result<QuantizeReport> r =
        quantize_file({.input = dir + "/f32.gguf", .output = dir + "/q.gguf", .file_type = "q4_k_m"});
    ASSERT_TRUE(r.ok()) << r.error();
    Result<GgufFile> a = GgufFile::open(dir + "/f32.gguf"), b = GgufFile::open(dir + "/q.gguf");
    ASSERT_TRUE(a.ok() && b.ok());
    for (const GgufTensorInfo& t : q->tensors()) {
      const GgufTensorInfo *ours = b->find_tensor(t.name), *src = a->find_tensor(t.name);
      ASSERT_NE(ours, nullptr) << t.name;
      EXPECT_EQ(ggml_type_name(ours->ggml_type), ggml_type_name(t.ggml_type)) << name << ": " << t.name;
      EXPECT_EQ(ours->nbytes, t.nbytes) << t.name;
      if (ours->ggml_type != 0) {
        EXPECT_LE(relative_rmse(*src, *ours), rmse_bound(ours->ggml_type)) << t.name;
      }
    }
  }
}

class QuantizeMix : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizeMix, FollowsPolicyWithinErrorAndDeterministic) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32(GetParam(), dir + "/f32.gguf");
  const std::string out1 = dir + "/a.gguf", out2 = dir + "/b.gguf";
  Result<QuantizeReport> r = quantize_file({.input = in, .output = out1, .file_type = "Q4_K_M"});
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_TRUE(quantize_file({.input = in, .output = out2, .file_type = "q4_k_m"}).ok());
  EXPECT_EQ(read_bytes(out1), read_bytes(out2));

  Result<GgufFile> a = GgufFile::open(in), b = GgufFile::open(out1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->get<uint32_t>("general.file_type").value(), 15u);
  EXPECT_EQ(b->get<uint32_t>("general.quantization_version").value(), 2u);
  Result<std::vector<uint32_t>> want =
      mix_tensor_types(*mix_file_type_by_name("q4_k_m"), *mix_model_from_gguf(*a), a->tensors());
  ASSERT_TRUE(want.ok()) << want.error();
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const GgufTensorInfo &x = a->tensors()[i], &y = b->tensors()[i];
    ASSERT_EQ(x.name, y.name);
    EXPECT_EQ(ggml_type_name(y.ggml_type), ggml_type_name((*want)[i])) << x.name;
    if (y.ggml_type == x.ggml_type) continue;
    EXPECT_LE(relative_rmse(x, y), rmse_bound(y.ggml_type)) << x.name << " " << ggml_type_name(y.ggml_type);
  }
  EXPECT_EQ(r->bytes_out, read_bytes(out1).size());
}

INSTANTIATE_TEST_SUITE_P(Tiny, QuantizeMix, ::testing::Values("qwen35-dense-tiny", "qwen35-moe-tiny"));

TEST(QuantizeMix, EveryMixRoundTrips) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-dense-tiny", dir + "/f32.gguf");
  for (const MixFileType& ft : mix_file_types()) {
    const std::string out = dir + "/" + std::string(ft.name) + ".gguf";
    Result<QuantizeReport> r = quantize_file({.input = in, .output = out, .file_type = std::string(ft.name)});
    ASSERT_TRUE(r.ok()) << ft.name << ": " << r.error();
    Result<GgufFile> b = GgufFile::open(out);
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(b->get<uint32_t>("general.file_type").value(), ft.llama_ftype) << ft.name;
  }
}

// As in llama-quantize, the 32-element types have no fallback: a row of 48 is an error.
TEST(QuantizeMix, RowWithoutFallbackIsNamed) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-moe-tiny", dir + "/f32.gguf");
  Result<QuantizeReport> r = quantize_file({.input = in, .output = dir + "/q4_0.gguf", .file_type = "q4_0"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("ffn_down_shexp.weight"), std::string::npos) << r.error();
  EXPECT_FALSE(fs::exists(dir + "/q4_0.gguf"));
}

TEST(QuantizeMix, RequantizesAQuantizedInput) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-dense-tiny", dir + "/f32.gguf");
  ASSERT_TRUE(quantize_file({.input = in, .output = dir + "/q6.gguf", .file_type = "q6_k"}).ok());
  Result<QuantizeReport> r =
      quantize_file({.input = dir + "/q6.gguf", .output = dir + "/q4.gguf", .file_type = "q4_0"});
  ASSERT_TRUE(r.ok()) << r.error();
  Result<GgufFile> b = GgufFile::open(dir + "/q4.gguf");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->get<uint32_t>("general.file_type").value(), 2u);
}

TEST(QuantizeMix, UnknownTypeNameLeavesNoFile) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-dense-tiny", dir + "/f32.gguf");
  Result<QuantizeReport> r = quantize_file({.input = in, .output = dir + "/out.gguf", .file_type = "q4_k_x"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("q4_k_x"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("q4_k_m"), std::string::npos) << r.error();  // lists what is accepted
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"f32.gguf"});
}

TEST(QuantizeMix, TruncatedInputLeavesNoFile) {
  const std::string dir = tmp_dir();
  const std::string in = convert_f32("qwen35-dense-tiny", dir + "/f32.gguf");
  std::vector<uint8_t> bytes = read_bytes(in);
  bytes.resize(bytes.size() / 2);
  write_text(dir + "/cut.gguf", std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  Result<QuantizeReport> r =
      quantize_file({.input = dir + "/cut.gguf", .output = dir + "/out.gguf", .file_type = "q4_k_m"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cut.gguf"), std::string::npos) << r.error();
  EXPECT_FALSE(fs::exists(dir + "/out.gguf"));
  EXPECT_EQ(files_in(dir).size(), 2u);  // no temp file either
}

TEST(QuantizeMix, UndecodableSourceTypeIsNamed) {
  const std::string dir = tmp_dir();
  const GgmlTypeInfo* iq2 = ggml_type_info(17);  // iq2_xs: no reference dequantizer here
  ASSERT_NE(iq2, nullptr);
  std::vector<uint8_t> data(2 * iq2->block_bytes);
  GgufFile f;
  f.set("general.architecture", "qwen35");
  f.set("qwen35.block_count", GgufValue(uint32_t{1}));
  const std::array<int64_t, 2> ne{256, 2};
  ASSERT_TRUE(f.add_tensor("blk.0.ffn_up.weight", 17, ne, data.data()).ok());
  ASSERT_TRUE(f.write(dir + "/iq2.gguf").ok());
  Result<QuantizeReport> r =
      quantize_file({.input = dir + "/iq2.gguf", .output = dir + "/out.gguf", .file_type = "q4_k_m"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("blk.0.ffn_up.weight"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("iq2_xs"), std::string::npos) << r.error();
  EXPECT_FALSE(fs::exists(dir + "/out.gguf"));
}

}  // namespace
}  // namespace gl::tools::test
