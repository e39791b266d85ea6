// transform_test.cpp - explicit spot checks of the qwen35 transforms on the dense fixture
// (Hk = 2, Hv = 4, Dk = Dv = 16, so r = 2 and the tiled value-head order is [v0, v2, v1, v3])
// and of the expert split on the MoE fixture. F32 output, so values compare exactly.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "expected_map.h"
#include "gguf-tools/convert.h"
#include "gguf-tools/model_spec.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

class Transforms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dense_ = std::make_unique<Converted>("qwen35-dense-tiny");
    moe_ = std::make_unique<Converted>("qwen35-moe-tiny");
  }
  static void TearDownTestSuite() {
    dense_.reset();
    moe_.reset();
  }

  struct Converted {
    explicit Converted(const std::string& fixture) {
      const std::string dir = fixture_dir(fixture);
      const std::string out =
          (fs::path(GL_BINARY_DIR) / "tools-test-tmp" / ("transforms-" + fixture + ".gguf")).string();
      fs::create_directories(fs::path(out).parent_path());
      ConvertOptions o;
      o.model_dir = dir;
      o.output = out;
      o.outtype = DType::F32;
      Result<ConvertReport> r = convert_checkpoint(o);
      EXPECT_TRUE(r.ok()) << r.error();
      file = std::move(GgufFile::open(out)).value();
      model = std::move(SafetensorsModel::open(dir)).value();
      prefix = fixture == "qwen35-dense-tiny" ? "model.language_model." : "model.";
    }
    // GGUF tensor as floats.
    std::vector<float> g(const std::string& name) const {
      const GgufTensorInfo* t = file.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      return t ? gguf_floats(*t) : std::vector<float>{};
    }
    // HF tensor (trunk-relative unless it starts with "mtp.") as floats.
    std::vector<float> h(const std::string& name) const {
      const SafetensorsTensor* t = model.find(name.rfind("mtp.", 0) == 0 ? name : prefix + name);
      EXPECT_NE(t, nullptr) << name;
      return t ? st_floats(*t) : std::vector<float>{};
    }
    GgufFile file;
    SafetensorsModel model;
    std::string prefix;
  };

  static std::unique_ptr<Converted> dense_, moe_;
};
std::unique_ptr<Transforms::Converted> Transforms::dense_, Transforms::moe_;

constexpr int64_t kH = 64, kDv = 16, kQK = 2 * 2 * 16, kKc = 4;

// Rows [row, row + n) of a row-major matrix with `cols` columns.
std::vector<float> rows(const std::vector<float>& m, int64_t cols, int64_t row, int64_t n) {
  return {m.begin() + row * cols, m.begin() + (row + n) * cols};
}

TEST_F(Transforms, TiledOrderFormula) {
  // Tiled position p holds grouped head (p % Hk) * r + p / Hk: [v0, v2, v1, v3] for Hk=2, Hv=4.
  EXPECT_EQ(grouped_head_for_tiled(0, 2, 4), 0);
  EXPECT_EQ(grouped_head_for_tiled(1, 2, 4), 2);
  EXPECT_EQ(grouped_head_for_tiled(2, 2, 4), 1);
  EXPECT_EQ(grouped_head_for_tiled(3, 2, 4), 3);
  // Hk=16, Hv=48 (r=3, Qwen3.6-27B): grouped head j = g*3 + i sits at p = i*16 + g.
  for (int64_t j = 0; j < 48; ++j) EXPECT_EQ(grouped_head_for_tiled((j % 3) * 16 + j / 3, 16, 48), j);
  // Hk == Hv: identity.
  for (int64_t p = 0; p < 16; ++p) EXPECT_EQ(grouped_head_for_tiled(p, 16, 16), p);
}

TEST_F(Transforms, NormsGetPlusOneExceptSsmNorm) {
  const auto& c = *dense_;
  const std::pair<const char*, const char*> plus_one[] = {
      {"blk.0.attn_norm.weight", "layers.0.input_layernorm.weight"},
      {"blk.0.post_attention_norm.weight", "layers.0.post_attention_layernorm.weight"},
      {"blk.3.attn_q_norm.weight", "layers.3.self_attn.q_norm.weight"},
      {"blk.3.attn_k_norm.weight", "layers.3.self_attn.k_norm.weight"},
      {"output_norm.weight", "norm.weight"},
      {"blk.4.nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"},
      {"blk.4.nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"},
      {"blk.4.nextn.shared_head_norm.weight", "mtp.norm.weight"},
      {"blk.4.attn_norm.weight", "mtp.layers.0.input_layernorm.weight"},
  };
  for (const auto& [gname, hname] : plus_one) {
    const std::vector<float> g = c.g(gname), h = c.h(hname);
    ASSERT_EQ(g.size(), h.size()) << gname;
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], h[i] + 1.0f) << gname << "[" << i << "]";
  }
  EXPECT_EQ(c.g("blk.0.ssm_norm.weight"), c.h("layers.0.linear_attn.norm.weight"));
}

TEST_F(Transforms, SsmAIsMinusExpALogAndDtBiasInTiledOrder) {
  const auto& c = *dense_;
  const std::vector<float> a = c.g("blk.1.ssm_a"), a_log = c.h("layers.1.linear_attn.A_log");
  const std::vector<float> dt = c.g("blk.1.ssm_dt.bias"), dt_bias = c.h("layers.1.linear_attn.dt_bias");
  const int order[] = {0, 2, 1, 3};
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(a[p], -std::exp(a_log[order[p]])) << p;
    EXPECT_LT(a[p], 0.0f);
    EXPECT_EQ(dt[p], dt_bias[order[p]]) << p;
  }
}

TEST_F(Transforms, ValueHeadRowsLandWhereLlamaCppPutsThem) {
  const auto& c = *dense_;
  // attn_gate (in_proj_z): tiled head 1 = HF head 2, tiled head 2 = HF head 1.
  const std::vector<float> z = c.g("blk.0.attn_gate.weight"), hz = c.h("layers.0.linear_attn.in_proj_z.weight");
  EXPECT_EQ(rows(z, kH, 0 * kDv, kDv), rows(hz, kH, 0 * kDv, kDv));
  EXPECT_EQ(rows(z, kH, 1 * kDv, kDv), rows(hz, kH, 2 * kDv, kDv));
  EXPECT_EQ(rows(z, kH, 2 * kDv, kDv), rows(hz, kH, 1 * kDv, kDv));
  EXPECT_EQ(rows(z, kH, 3 * kDv, kDv), rows(hz, kH, 3 * kDv, kDv));
  // attn_qkv: q and k rows untouched, V heads reordered.
  const std::vector<float> qkv = c.g("blk.0.attn_qkv.weight"), hqkv = c.h("layers.0.linear_attn.in_proj_qkv.weight");
  EXPECT_EQ(rows(qkv, kH, 0, kQK), rows(hqkv, kH, 0, kQK));
  EXPECT_EQ(rows(qkv, kH, kQK + 1 * kDv, kDv), rows(hqkv, kH, kQK + 2 * kDv, kDv));
  EXPECT_EQ(rows(qkv, kH, kQK + 2 * kDv, kDv), rows(hqkv, kH, kQK + 1 * kDv, kDv));
  // ssm_beta / ssm_alpha: one row per value head.
  const std::vector<float> b = c.g("blk.0.ssm_beta.weight"), hb = c.h("layers.0.linear_attn.in_proj_b.weight");
  const std::vector<float> al = c.g("blk.0.ssm_alpha.weight"), ha = c.h("layers.0.linear_attn.in_proj_a.weight");
  EXPECT_EQ(rows(b, kH, 1, 1), rows(hb, kH, 2, 1));
  EXPECT_EQ(rows(b, kH, 2, 1), rows(hb, kH, 1, 1));
  EXPECT_EQ(rows(al, kH, 1, 1), rows(ha, kH, 2, 1));
  EXPECT_EQ(rows(al, kH, 3, 1), rows(ha, kH, 3, 1));
}

TEST_F(Transforms, Conv1dIsSqueezedWithVChannelsReordered) {
  const auto& c = *dense_;
  const GgufTensorInfo* t = c.file.find_tensor("blk.2.ssm_conv1d.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_dims, 2u);
  EXPECT_EQ(t->ne[0], kKc);
  EXPECT_EQ(t->ne[1], kQK + 4 * kDv);
  const std::vector<float> g = c.g("blk.2.ssm_conv1d.weight"), h = c.h("layers.2.linear_attn.conv1d.weight");
  EXPECT_EQ(rows(g, kKc, 0, kQK), rows(h, kKc, 0, kQK));                          // q, k channels
  EXPECT_EQ(rows(g, kKc, kQK + 1 * kDv, kDv), rows(h, kKc, kQK + 2 * kDv, kDv));  // V head 1 <- 2
  EXPECT_EQ(rows(g, kKc, kQK + 2 * kDv, kDv), rows(h, kKc, kQK + 1 * kDv, kDv));  // V head 2 <- 1
}

TEST_F(Transforms, SsmOutColumnsReordered) {
  const auto& c = *dense_;
  const std::vector<float> g = c.g("blk.0.ssm_out.weight"), h = c.h("layers.0.linear_attn.out_proj.weight");
  const int64_t cols = 4 * kDv;
  for (int64_t row = 0; row < kH; ++row) {
    for (int64_t d = 0; d < kDv; ++d) {
      ASSERT_EQ(g[row * cols + 0 * kDv + d], h[row * cols + 0 * kDv + d]);
      ASSERT_EQ(g[row * cols + 1 * kDv + d], h[row * cols + 2 * kDv + d]);
      ASSERT_EQ(g[row * cols + 2 * kDv + d], h[row * cols + 1 * kDv + d]);
      ASSERT_EQ(g[row * cols + 3 * kDv + d], h[row * cols + 3 * kDv + d]);
    }
  }
}

TEST_F(Transforms, AttentionQKeepsPerHeadInterleavedGate) {
  const auto& c = *dense_;
  EXPECT_EQ(c.g("blk.3.attn_q.weight"), c.h("layers.3.self_attn.q_proj.weight"));
  EXPECT_EQ(c.g("blk.4.attn_q.weight"), c.h("mtp.layers.0.self_attn.q_proj.weight"));
  EXPECT_EQ(c.g("blk.4.nextn.eh_proj.weight"), c.h("mtp.fc.weight"));
  EXPECT_EQ(c.g("output.weight"), st_floats(*c.model.find("lm_head.weight")));
}

TEST_F(Transforms, ExpertsSplitIntoGateAndUp) {
  const auto& c = *moe_;
  constexpr int64_t E = 8, Fe = 32;
  const std::vector<float> gate = c.g("blk.1.ffn_gate_exps.weight"), up = c.g("blk.1.ffn_up_exps.weight");
  const std::vector<float> down = c.g("blk.1.ffn_down_exps.weight");
  const std::vector<float> gu = c.h("layers.1.mlp.experts.gate_up_proj"), hd = c.h("layers.1.mlp.experts.down_proj");
  for (int64_t e : {int64_t{0}, int64_t{3}, E - 1}) {
    for (int64_t f : {int64_t{0}, int64_t{5}, Fe - 1}) {
      EXPECT_EQ(rows(gate, kH, e * Fe + f, 1), rows(gu, kH, e * 2 * Fe + f, 1)) << e << "," << f;
      EXPECT_EQ(rows(up, kH, e * Fe + f, 1), rows(gu, kH, e * 2 * Fe + Fe + f, 1)) << e << "," << f;
    }
  }
  EXPECT_EQ(down, hd);
  EXPECT_EQ(c.g("blk.1.ffn_gate_inp_shexp.weight"), c.h("layers.1.mlp.shared_expert_gate.weight"));
  EXPECT_EQ(c.g("blk.4.ffn_gate_inp.weight"), c.h("mtp.layers.0.mlp.gate.weight"));
}

// Qwen3-Next / FP8-style per-expert tensors (mlp.experts.{e}.{gate,up,down}_proj.weight) must
// give exactly the file the fused layout gives.
TEST(TransformsPerExpert, SameFileAsFusedExperts) {
  const std::string dir = tmp_dir(), src = fixture_dir("qwen35-moe-tiny");
  copy_fixture_meta(src, dir);
  constexpr int64_t E = 8, Fe = 32;
  std::vector<StTensor> out;
  for (StTensor& t : copy_tensors(std::move(SafetensorsModel::open(src)).value())) {
    const bool gate_up = t.name.ends_with("mlp.experts.gate_up_proj"), down = t.name.ends_with("mlp.experts.down_proj");
    if (!gate_up && !down) {
      out.push_back(std::move(t));
      continue;
    }
    const std::string base = t.name.substr(0, t.name.rfind('.'));
    const size_t per = t.bytes.size() / E;  // one expert's [2Fe, H] or [H, Fe]
    for (int64_t e = 0; e < E; ++e) {
      const auto at = t.bytes.begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(e));
      const std::string p = fmt::format("{}.{}.", base, e);
      if (down) {
        out.push_back({p + "down_proj.weight", "F32", {kH, Fe}, {at, at + static_cast<std::ptrdiff_t>(per)}});
      } else {
        const auto half = static_cast<std::ptrdiff_t>(per / 2);
        out.push_back({p + "gate_proj.weight", "F32", {Fe, kH}, {at, at + half}});
        out.push_back({p + "up_proj.weight", "F32", {Fe, kH}, {at + half, at + 2 * half}});
      }
    }
  }
  write_safetensors(dir + "/model.safetensors", out);
  for (DType type : {DType::F32, DType::Q8_0}) {
    ConvertOptions o;
    o.outtype = type;
    o.name = "same";
    o.model_dir = src;
    o.output = dir + "/fused.gguf";
    ASSERT_TRUE(convert_checkpoint(o).ok());
    o.model_dir = dir;
    o.output = dir + "/per-expert.gguf";
    Result<ConvertReport> r = convert_checkpoint(o);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(read_bytes(dir + "/fused.gguf"), read_bytes(dir + "/per-expert.gguf")) << dtype_name(type);
  }
}

// With Hk = 2, Hv = 4 the grouped -> tiled permutation is its own inverse, so the fixture cannot
// tell a mapping from its inverse. Rebuild the dense fixture with Hv = 6 (r = 3) and compare every
// GDN tensor with llama.cpp's forward form (expected_map.h).
TEST(TransformsNonSquare, Hk2Hv6MatchesLlamaCppForwardReorder) {
  const std::string dir = tmp_dir(), src = fixture_dir("qwen35-dense-tiny");
  copy_fixture_meta(src, dir);
  nlohmann::json cfg = read_json(dir + "/config.json");
  cfg["text_config"]["linear_num_value_heads"] = 6;
  write_text(dir + "/config.json", cfg.dump(1));
  const Geometry g(cfg["text_config"]);
  const int64_t C = g.qk() + g.Hv * g.Dv, V = g.Hv * g.Dv;
  const std::map<std::string, std::vector<int64_t>> gdn = {{"in_proj_qkv.weight", {C, g.H}},
                                                           {"in_proj_z.weight", {V, g.H}},
                                                           {"in_proj_b.weight", {g.Hv, g.H}},
                                                           {"in_proj_a.weight", {g.Hv, g.H}},
                                                           {"conv1d.weight", {C, 1, g.Kc}},
                                                           {"dt_bias", {g.Hv}},
                                                           {"A_log", {g.Hv}},
                                                           {"out_proj.weight", {g.H, V}}};
  std::vector<StTensor> ts = copy_tensors(std::move(SafetensorsModel::open(src)).value());
  for (StTensor& t : ts) {
    const size_t at = t.name.find("linear_attn.");
    if (at == std::string::npos || !gdn.count(t.name.substr(at + 12))) continue;
    t.shape = gdn.at(t.name.substr(at + 12));
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(0.37f * static_cast<float>(i) + 0.1f * static_cast<float>(t.name.size()));
    t.bytes.resize(v.size() * 4);
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  }
  write_safetensors(dir + "/model.safetensors", ts);

  ConvertOptions o;
  o.model_dir = dir;
  o.output = dir + "/out.gguf";
  o.outtype = DType::F32;
  Result<ConvertReport> r = convert_checkpoint(o);
  ASSERT_TRUE(r.ok()) << r.error();
  Result<GgufFile> f = GgufFile::open(o.output);
  Result<SafetensorsModel> m = SafetensorsModel::open(dir);
  ASSERT_TRUE(f.ok() && m.ok());
  const std::pair<const char*, Kind> checks[] = {{"in_proj_qkv.weight", Kind::QKV},
                                                 {"in_proj_z.weight", Kind::Z},
                                                 {"in_proj_b.weight", Kind::BA},
                                                 {"in_proj_a.weight", Kind::BA},
                                                 {"conv1d.weight", Kind::CONV},
                                                 {"dt_bias", Kind::DT},
                                                 {"A_log", Kind::A_LOG},
                                                 {"out_proj.weight", Kind::OUT}};
  const std::map<std::string, std::string> gguf_name = {{"in_proj_qkv.weight", "attn_qkv.weight"},
                                                        {"in_proj_z.weight", "attn_gate.weight"},
                                                        {"in_proj_b.weight", "ssm_beta.weight"},
                                                        {"in_proj_a.weight", "ssm_alpha.weight"},
                                                        {"conv1d.weight", "ssm_conv1d.weight"},
                                                        {"dt_bias", "ssm_dt.bias"},
                                                        {"A_log", "ssm_a"},
                                                        {"out_proj.weight", "ssm_out.weight"}};
  for (const auto& [hf, kind] : checks) {
    const SafetensorsTensor* s = m->find("model.language_model.layers.1.linear_attn." + std::string(hf));
    const GgufTensorInfo* t = f->find_tensor("blk.1." + gguf_name.at(hf));
    ASSERT_TRUE(s && t) << hf;
    EXPECT_EQ(gguf_floats(*t), expected_values(kind, st_floats(*s), s->shape, g)) << hf;
  }
  // Spot check in words: with r = 3 the tiled order is [v0, v3, v1, v4, v2, v5].
  const std::vector<float> z = gguf_floats(*f->find_tensor("blk.1.attn_gate.weight"));
  const std::vector<float> hz = st_floats(*m->find("model.language_model.layers.1.linear_attn.in_proj_z.weight"));
  const int64_t order[] = {0, 3, 1, 4, 2, 5};
  for (int64_t p = 0; p < 6; ++p)
    EXPECT_EQ(rows(z, kH, p * kDv, kDv), rows(hz, kH, order[p] * kDv, kDv)) << "tiled head " << p;
}

}  // namespace
}  // namespace gl::tools::test
