// quant_mix_test.cpp - the per-tensor mix policy against files llama-quantize wrote: for every
// fixture in shared/fixtures/llama-quants, each tensor's type must be the one llama.cpp chose.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf-tools/quant_mix.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

std::string llama_quants_dir() {
  return (fs::path(GL_SOURCE_DIR) / ".." / "shared" / "fixtures" / "llama-quants").string();
}

struct Case {
  const char* file;
  const char* type;
};

class MixPolicy : public ::testing::TestWithParam<Case> {};

TEST_P(MixPolicy, MatchesLlamaQuantize) {
  const std::string path = llama_quants_dir() + "/" + GetParam().file + ".gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no fixture at " << path;
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error();
  const MixFileType* ft = mix_file_type_by_name(GetParam().type);
  ASSERT_NE(ft, nullptr) << GetParam().type;
  EXPECT_EQ(f->get<uint32_t>("general.file_type").value(), ft->llama_ftype);
  Result<MixModel> m = mix_model_from_gguf(*f);
  ASSERT_TRUE(m.ok()) << m.error();
  // The fixtures' weights were F32 before llama-quantize ran: ask the policy about the F32 tensors.
  std::vector<GgufTensorInfo> src = f->tensors();
  for (GgufTensorInfo& t : src) t.ggml_type = 0;
  Result<std::vector<uint32_t>> types = mix_tensor_types(*ft, *m, src);
  ASSERT_TRUE(types.ok()) << types.error();
  size_t n_quantized = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    EXPECT_EQ(ggml_type_name((*types)[i]), ggml_type_name(t.ggml_type)) << GetParam().file << ": " << t.name;
    n_quantized += t.ggml_type != 0;
  }
  EXPECT_GT(n_quantized, src.size() / 3);
}

INSTANTIATE_TEST_SUITE_P(LlamaQuants, MixPolicy,
                         ::testing::Values(Case{"dense-Q4_K_M", "q4_k_m"}, Case{"dense-Q5_K_M", "Q5_K_M"},
                                           Case{"dense-Q6_K", "q6_k"}, Case{"dense-Q3_K_M", "q3_k_m"},
                                           Case{"dense-Q2_K", "q2_k"}, Case{"dense-Q4_0", "q4_0"},
                                           Case{"dense-Q4_1", "q4_1"}, Case{"dense-Q5_0", "q5_0"},
                                           Case{"dense-IQ4_NL", "iq4_nl"}, Case{"dense-IQ4_XS", "iq4_xs"},
                                           Case{"moe-Q4_K_M", "q4_k_m"}, Case{"moe-MXFP4_MOE", "mxfp4_moe"}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           std::string n = p.param.file;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(MixPolicy, FallbacksForRowsThatAreNotWholeBlocks) {
  // Rows of 48: q4_K (256) falls to q5_0 (32), which does not fit either: F16.
  // Rows of 96: q4_K -> q5_0; output q6_K -> q8_0 because the mix's block does not divide 96.
  const MixModel m{.arch = "qwen35", .n_layer = 1, .n_expert = 0, .n_gqa = 2};
  std::vector<GgufTensorInfo> ts(3);
  ts[0].name = "blk.0.ffn_gate.weight", ts[0].n_dims = 2, ts[0].ne = {48, 64, 1, 1};
  ts[1].name = "blk.0.ffn_up.weight", ts[1].n_dims = 2, ts[1].ne = {96, 64, 1, 1};
  ts[2].name = "output.weight", ts[2].n_dims = 2, ts[2].ne = {96, 64, 1, 1};
  Result<std::vector<uint32_t>> types = mix_tensor_types(*mix_file_type_by_name("q4_k_m"), m, ts);
  ASSERT_TRUE(types.ok()) << types.error();
  EXPECT_EQ(ggml_type_name((*types)[0]), "f16");
  EXPECT_EQ(ggml_type_name((*types)[1]), "q5_0");
  EXPECT_EQ(ggml_type_name((*types)[2]), "q8_0");
  // q8_0 has no fallback: the error names the tensor.
  ts[1].ne[0] = 40;
  types = mix_tensor_types(*mix_file_type_by_name("q8_0"), m, ts);
  ASSERT_FALSE(types.ok());
  EXPECT_NE(types.error().find("blk.0.ffn_gate.weight"), std::string::npos) << types.error();
}

// Q4_K_M with 16 layers: the first and last eighth (0, 1, 14, 15) and every third layer from
// n/8 (4, 7, 10, 13) get q6_K in attn_v and ffn_down; the rest stay q4_K.
TEST(MixPolicy, MoreBitsLayersOfQ4_K_M) {
  const MixModel m{.arch = "qwen35", .n_layer = 16, .n_expert = 0, .n_gqa = 2};
  std::vector<GgufTensorInfo> ts;
  for (int il = 15; il >= 0; --il)  // reverse order: the counters follow llama.cpp's order, not ours
    for (const char* leaf : {"attn_v.weight", "ffn_down.weight", "attn_q.weight"}) {
      GgufTensorInfo& t = ts.emplace_back();
      t.name = "blk." + std::to_string(il) + "." + leaf, t.n_dims = 2, t.ne = {256, 256, 1, 1};
    }
  Result<std::vector<uint32_t>> types = mix_tensor_types(*mix_file_type_by_name("q4_k_m"), m, ts);
  ASSERT_TRUE(types.ok()) << types.error();
  for (size_t i = 0; i < ts.size(); ++i) {
    const int il = 15 - static_cast<int>(i / 3);
    const bool more = il == 0 || il == 1 || il == 14 || il == 15 || il % 3 == 1;
    const bool bumpable = i % 3 != 2;
    EXPECT_EQ(ggml_type_name((*types)[i]), more && bumpable ? "q6_K" : "q4_K") << ts[i].name;
  }
}

TEST(MixPolicy, NamesAreCaseInsensitive) {
  EXPECT_EQ(mix_file_type_by_name("Q4_K_M"), mix_file_type_by_name("q4_k_m"));
  EXPECT_EQ(mix_file_type_by_name("q4_k_m")->llama_ftype, 15u);
  EXPECT_EQ(mix_file_type_by_name("q7_k"), nullptr);
}

}  // namespace
}  // namespace gl::tools::test
