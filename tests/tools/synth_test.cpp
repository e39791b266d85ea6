// synth_test.cpp - gguf-synth: the tiny presets load back with the converter's names and keys,
// values are sane and reproducible, and the real presets have the published sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "gguf-tools/convert.h"
#include "gguf-tools/quantize.h"
#include "gguf-tools/synth.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

Result<GgufFile> synth(const std::string& preset, DType type, uint64_t seed, const std::string& out) {
  Result<SynthReport> r = synth_model({.preset = preset, .type = type, .seed = seed, .output = out});
  if (!r) return Error(r.error());
  return GgufFile::open(out);
}

std::set<std::string> key_names(const GgufFile& f) {
  std::set<std::string> s;
  for (const GgufKV& kv : f.kvs()) s.insert(kv.key);
  return s;
}

std::vector<std::string> tensor_names(const GgufFile& f) {
  std::vector<std::string> s;
  for (const GgufTensorInfo& t : f.tensors()) s.push_back(t.name);
  return s;
}

TEST(Synth, TinyLoadsBackLikeAConvertedFile) {
  const std::string dir = tmp_dir();
  Result<GgufFile> f = synth("tiny", DType::Q8_0, 7, dir + "/tiny.gguf");
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->tensors().size(), 71u);
  EXPECT_EQ(f->get<std::string>("general.architecture").value(), "qwen35");
  EXPECT_EQ(f->get<uint32_t>("qwen35.block_count").value(), 5u);
  EXPECT_EQ(f->get<uint32_t>("qwen35.nextn_predict_layers").value(), 1u);
  EXPECT_EQ(f->get<uint32_t>("general.file_type").value(), 7u);
  EXPECT_EQ(f->get_array<std::string>("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(f->get<std::string>("tokenizer.ggml.pre").value(), "qwen35");

  // The fixture has the same structure (4 + 1 layers, GDN 2/4), so keys and names must agree.
  ConvertOptions o;
  o.model_dir = fixture_dir("qwen35-dense-tiny");
  o.outtype = DType::Q8_0;
  o.dry_run = true;
  Result<ConvertReport> c = convert_checkpoint(o);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(key_names(*f), key_names(c->layout));
  EXPECT_EQ(tensor_names(*f), tensor_names(c->layout));
  for (size_t i = 0; i < f->tensors().size(); ++i)
    EXPECT_EQ(f->tensors()[i].ggml_type, c->layout.tensors()[i].ggml_type) << f->tensors()[i].name;
}

TEST(Synth, TinyMoeMatchesTheMoeFixtureLayout) {
  const std::string dir = tmp_dir();
  Result<GgufFile> f = synth("tiny-moe", DType::BF16, 1, dir + "/moe.gguf");
  ASSERT_TRUE(f.ok()) << f.error();
  ConvertOptions o;
  o.model_dir = fixture_dir("qwen35-moe-tiny");
  o.outtype = DType::BF16;
  o.dry_run = true;
  Result<ConvertReport> c = convert_checkpoint(o);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(key_names(*f), key_names(c->layout));
  EXPECT_EQ(tensor_names(*f), tensor_names(c->layout));
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied
}

TEST(Synth, ValuesAreSane) {
  const std::string dir = tmp_dir();
  Result<GgufFile> f = synth("tiny", DType::F32, 3, dir + "/tiny.gguf");
  ASSERT_TRUE(f.ok()) << f.error();
  for (const GgufTensorInfo& t : f->tensors()) {
    const std::vector<float> v = gguf_floats(t);
    double sum2 = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << t.name;
      sum2 += double(x) * x;
    }
    const double rms = std::sqrt(sum2 / static_cast<double>(v.size()));
    if (t.name.find("norm.weight") != std::string::npos) {
      for (float x : v) ASSERT_TRUE(x > 0.85f && x < 1.15f) << t.name << " " << x;
    } else if (t.name.ends_with("ssm_a")) {
      for (float x : v) ASSERT_TRUE(x < -0.99f && x > -12.2f) << t.name << " " << x;
    } else if (t.name.ends_with(".weight") && t.name.find("token_embd") == std::string::npos &&
               t.name != "output.weight") {
      EXPECT_NEAR(rms * std::sqrt(static_cast<double>(t.ne[0])), 1.0, 0.25) << t.name;  // std 1/sqrt(fan_in)
    }
  }
}

TEST(Synth, ReproducibleAndSeeded) {
  const std::string dir = tmp_dir();
  ASSERT_TRUE(synth("tiny", DType::F16, 5, dir + "/a.gguf").ok());
  ASSERT_TRUE(synth("tiny", DType::F16, 5, dir + "/b.gguf").ok());
  ASSERT_TRUE(synth("tiny", DType::F16, 6, dir + "/c.gguf").ok());
  EXPECT_EQ(read_bytes(dir + "/a.gguf"), read_bytes(dir + "/b.gguf"));
  EXPECT_NE(read_bytes(dir + "/a.gguf"), read_bytes(dir + "/c.gguf"));
  // Chunking does not change values: element i is a function of (seed, name, i) only.
  const std::vector<TensorSpec> specs = tensor_specs(find_preset("tiny")->dims);
  Result<GgufFile> a = GgufFile::open(dir + "/a.gguf");
  ASSERT_TRUE(a.ok());
  const GgufTensorInfo* t = a->find_tensor(specs[2].name);
  const std::vector<float> v = gguf_floats(*t);
  for (int64_t i : {int64_t{0}, int64_t{1}, t->nelements() - 1})
    EXPECT_EQ(v[static_cast<size_t>(i)], fp16_to_fp32(fp32_to_fp16(synth_value(5, specs[2], i))));
}

TEST(Synth, RealPresetsHavePublishedSizes) {
  // Parameter counts incl. the MTP layer; perf-anchors.md: 9B is 8.95 B without MTP,
  // 35B-A3B 35.51 B with it. Tensors: GDN layer 14 (dense) / 19 (MoE), attention layer 11 / 16,
  // MTP block + 4 nextn, plus token_embd, output_norm and (untied) output.
  struct Want {
    const char* preset;
    uint64_t params;
    size_t tensors;
  };
  for (const Want& w : {Want{"qwen35-0.8b", 772845888, 335}, Want{"qwen35-9b", 9197093888, 442},
                        Want{"qwen35-35b-a3b", 35505251456, 753}}) {
    Result<SynthReport> r = synth_model({.preset = w.preset, .type = DType::Q8_0, .dry_run = true});
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->n_params, w.params) << w.preset;
    EXPECT_EQ(r->layout.tensors().size(), w.tensors) << w.preset;
  }
  Result<SynthReport> r = synth_model({.preset = "qwen35-9b", .type = DType::Q8_0, .dry_run = true});
  ASSERT_TRUE(r.ok());
  const GgufFile& f = r->layout;
  EXPECT_EQ(f.get<uint32_t>("qwen35.block_count").value(), 33u);
  EXPECT_EQ(f.get<uint32_t>("qwen35.ssm.time_step_rank").value(), 32u);
  EXPECT_EQ(f.get<uint32_t>("qwen35.vocab_size").value(), 248320u);
  EXPECT_EQ(f.find_tensor("blk.32.nextn.eh_proj.weight")->ne[0], 8192);
}

// general.size_label as llama.cpp's converter writes it. Expected values from gguf-py (its
// Metadata.get_model_id_components for a name, size_label() for the tensor counts), run on these
// names and on the tensor shapes of `gguf-synth --dry-run`.
TEST(Synth, SizeLabelIsTheConvertersOwn) {
  struct Want {
    const char* preset;
    const char* name;
    const char* label;
  };
  for (const Want& w : {Want{"qwen35-9b", "", "9.2B"}, Want{"qwen35-0.8b", "", "773M"}, Want{"tiny", "", "315K"},
                        Want{"qwen35-35b-a3b", "", "256x2.6B"}, Want{"tiny-moe", "", "8x239K"},
                        Want{"qwen35-35b-a3b", "Qwen3.5-35B-A3B", "35B-A3B"},
                        Want{"qwen35-35b-a3b", "qwen35-35b-a3b", "35B-a3B"}, Want{"qwen35-9b", "Qwen3.5-9B", "9B"},
                        Want{"qwen35-9b", "Qwen3.5-9B-128K", "9B"}, Want{"qwen35-0.8b", "qwen35-0.8b", "0.8B"}}) {
    const SynthPreset* p = find_preset(w.preset);
    ASSERT_NE(p, nullptr) << w.preset;
    EXPECT_EQ(qwen35::size_label(p->dims, w.name), w.label) << w.preset << " named '" << w.name << "'";
  }
  Result<SynthReport> r = synth_model({.preset = "qwen35-35b-a3b", .type = DType::Q8_0, .dry_run = true});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->layout.get<std::string>("general.size_label").value(), "35B-a3B");
  const GgufTensorInfo* g = r->layout.find_tensor("blk.0.ffn_gate_inp_shexp.weight");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->n_dims, 2u);  // [2048, 1], as llama.cpp's converter writes it
  EXPECT_EQ(g->ne[0], 2048);
  EXPECT_EQ(g->ne[1], 1);
}

// A mix in memory: the layout gguf-quantize writes for the same mix of the Q8_0 model (types, sizes,
// file type), quantized tensors' first rows the reference quantizer's, every row one of them.
TEST(Synth, MixInMemoryHasTheQuantizersLayoutAndPooledRows) {
  const std::string dir = tmp_dir();
  ASSERT_TRUE(synth("tiny-moe", DType::Q8_0, 2, dir + "/q8.gguf").ok());
  Result<QuantizeReport> q =
      quantize_file({.input = dir + "/q8.gguf", .output = dir + "/q4km.gguf", .file_type = "q4_k_m"});
  ASSERT_TRUE(q.ok()) << q.error();
  Result<GgufFile> want = GgufFile::open(dir + "/q4km.gguf");
  ASSERT_TRUE(want.ok()) << want.error();
  constexpr int64_t kPool = 1024;  // values: a few rows, so that most rows are copies
  Result<SynthModel> m =
      SynthModel::create({.preset = "tiny-moe", .type = DType::Q8_0, .seed = 2, .mix = "q4_k_m", .pool_values = kPool});
  ASSERT_TRUE(m.ok()) << m.error();
  const GgufFile& got = m->layout();
  EXPECT_EQ(got.get<uint32_t>("general.file_type").value(), want->get<uint32_t>("general.file_type").value());
  EXPECT_EQ(got.get<uint32_t>("general.quantization_version").value(), 2u);
  ASSERT_EQ(got.tensors().size(), want->tensors().size());
  const std::vector<TensorSpec> specs = tensor_specs(find_preset("tiny-moe")->dims);
  int pooled = 0, copies = 0;
  for (size_t i = 0; i < got.tensors().size(); ++i) {
    const GgufTensorInfo& t = got.tensors()[i];
    EXPECT_EQ(t.ggml_type, want->tensors()[i].ggml_type) << t.name;
    EXPECT_EQ(t.nbytes, want->tensors()[i].nbytes) << t.name;
    const DType type = dtype_from_ggml(t.ggml_type).value();
    if (!dtype_traits(type).is_quant) continue;
    std::vector<uint8_t> bytes(t.nbytes);
    ASSERT_TRUE(m->fill(t, bytes.data()).ok()) << t.name;
    const int64_t ne0 = t.ne[0], rows = t.nelements() / ne0;
    const size_t rb = row_bytes(type, ne0);
    const int64_t pool = std::min<int64_t>(std::max<int64_t>(kPool / ne0, 1), rows);
    std::vector<float> values(static_cast<size_t>(ne0));
    std::string row(rb, '\0');
    std::set<std::string> pool_rows;  // row bytes
    auto row_at = [&](int64_t r) { return std::string(reinterpret_cast<const char*>(bytes.data()) + r * rb, rb); };
    for (int64_t r = 0; r < pool; ++r) {
      for (int64_t e = 0; e < ne0; ++e) values[static_cast<size_t>(e)] = synth_value(2, specs[i], r * ne0 + e);
      from_float(type, values.data(), row.data(), ne0);
      ASSERT_EQ(row_at(r), row) << t.name << " " << r;
      pool_rows.insert(row);
    }
    for (int64_t r = pool; r < rows; ++r) {
      ASSERT_TRUE(pool_rows.contains(row_at(r))) << t.name << " " << r;
      ++copies;
    }
    ++pooled;
  }
  EXPECT_GT(pooled, 10);
  EXPECT_GT(copies, 1000);
  Result<SynthReport> r = synth_model({.preset = "tiny-moe", .output = dir + "/never.gguf", .mix = "q4_k_m"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("in memory only"), std::string::npos) << r.error();
  Result<SynthModel> bad = SynthModel::create({.preset = "tiny-moe", .mix = "q4_k_z"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unknown file type 'q4_k_z'"), std::string::npos) << bad.error();
}

TEST(Synth, UnknownPresetIsNamed) {
  Result<SynthReport> r = synth_model({.preset = "llama-7b", .output = "/tmp/never.gguf"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unknown preset 'llama-7b'"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace gl::tools::test
