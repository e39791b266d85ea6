// hparams_test.cpp - the one Hparams definition: what gguf-synth / gguf-convert write is what
// the loader reads back, and the converter's tensor table is the loader's layout.
#include <gtest/gtest.h>

#include <string>

#include "ggml-lite/models/qwen35_hparams.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/synth.h"

namespace gl::test {
namespace {

TEST(Hparams, EveryPresetRoundTripsThroughGguf) {
  for (const tools::SynthPreset& p : tools::synth_presets()) {
    Result<tools::SynthModel> s = tools::SynthModel::create({.preset = p.name, .type = DType::Q8_0});
    ASSERT_TRUE(s.ok()) << s.error();
    Result<qwen35::Hparams> back = qwen35::Hparams::from_gguf(s->layout());
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(*back == p.dims) << p.name;
  }
}

TEST(Hparams, ConverterTableIsTheLoaderLayout) {
  for (const tools::SynthPreset& p : tools::synth_presets()) {
    const std::vector<qwen35::WeightSpec> layout = qwen35::weight_layout(p.dims);
    const std::vector<tools::TensorSpec> specs = tools::tensor_specs(p.dims);
    ASSERT_EQ(layout.size(), specs.size()) << p.name;
    for (size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(specs[i].name, layout[i].name) << p.name;
      EXPECT_EQ(specs[i].ne, layout[i].ne) << specs[i].name;
    }
  }
}

TEST(Hparams, WeightNames) {
  EXPECT_EQ(qwen35::weight_name(qwen35::WeightId::TOKEN_EMBD), "token_embd.weight");
  EXPECT_EQ(qwen35::weight_name(qwen35::WeightId::SSM_QKV, 3), "blk.3.attn_qkv.weight");
  EXPECT_EQ(qwen35::weight_name(qwen35::WeightId::SSM_A, 0), "blk.0.ssm_a");
  EXPECT_EQ(qwen35::weight_name(qwen35::WeightId::NEXTN_EH_PROJ, 4), "blk.4.nextn.eh_proj.weight");
}

}  // namespace
}  // namespace gl::test
