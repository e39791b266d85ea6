// convert_test.cpp - gguf-convert on the committed tiny checkpoints (dense VL layout, sharded;
// MoE flat layout, tied, fused experts), for every output type: tensor names, ggml shapes, types,
// keys, values (against the tests' own statement of the transforms), byte-exact round trips.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "expected_map.h"
#include "gguf-tools/convert.h"
#include "gguf-tools/model_spec.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

struct Case {
  const char* fixture;
  DType type;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = std::string(info.param.fixture) + "_" + std::string(dtype_name(info.param.type));
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

class ConvertFixture : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fixture_dir(GetParam().fixture);
    cfg_ = read_json(dir_ + "/config.json");
    text_ = text_config(cfg_);
    ref_ = read_json(dir_ + "/reference.json");
    out_ = tmp_dir() + "/out.gguf";
    ConvertOptions o;
    o.model_dir = dir_;
    o.output = out_;
    o.outtype = GetParam().type;
    Result<ConvertReport> r = convert_checkpoint(o);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->warnings.empty());
    Result<GgufFile> f = GgufFile::open(out_);
    ASSERT_TRUE(f.ok()) << f.error();
    file_ = std::move(f).value();
    Result<SafetensorsModel> m = SafetensorsModel::open(dir_);
    ASSERT_TRUE(m.ok()) << m.error();
    model_ = std::make_unique<SafetensorsModel>(std::move(m).value());
  }

  bool moe() const { return text_.contains("num_experts"); }
  bool tied() const { return cfg_.value("tie_word_embeddings", text_.value("tie_word_embeddings", false)); }
  std::string arch() const { return moe() ? "qwen35moe" : "qwen35"; }
  std::vector<Expect> expected() const {
    return expected_tensors(ref_["param_names"].get<std::vector<std::string>>(), Geometry(text_), tied(),
                            cfg_.contains("text_config"));
  }
  // The type the tests expect for a tensor of n_dims with ne0 under the requested file type.
  DType expected_type(const std::string& name, size_t n_dims, int64_t ne0) const {
    if (stays_f32(name, n_dims)) return DType::F32;
    if (GetParam().type == DType::Q8_0 && ne0 % 32 != 0) return DType::F16;
    return GetParam().type;
  }

  std::string dir_, out_;
  nlohmann::json cfg_, text_, ref_;
  GgufFile file_;
  std::unique_ptr<SafetensorsModel> model_;
};

TEST_P(ConvertFixture, TensorNamesShapesAndTypes) {
  const std::vector<Expect> want = expected();
  std::set<std::string> want_names;
  for (const Expect& e : want) want_names.insert(e.gguf);
  std::set<std::string> got_names;
  for (const GgufTensorInfo& t : file_.tensors()) got_names.insert(t.name);
  EXPECT_EQ(got_names, want_names);
  EXPECT_EQ(file_.tensors().size(), want.size());
  EXPECT_EQ(tied(), file_.find_tensor("output.weight") == nullptr);
  for (const Expect& e : want) {
    const GgufTensorInfo* t = file_.find_tensor(e.gguf);
    const SafetensorsTensor* s = model_->find(e.hf);
    ASSERT_NE(t, nullptr) << e.gguf;
    ASSERT_NE(s, nullptr) << e.hf;
    const std::vector<int64_t> ne = expected_ne(e.kind, s->shape);
    EXPECT_EQ(std::vector<int64_t>(t->ne.begin(), t->ne.begin() + t->n_dims), ne) << e.gguf;
    const DType type = expected_type(e.gguf, ne.size(), ne[0]);
    EXPECT_EQ(t->ggml_type, dtype_traits(type).ggml_type) << e.gguf << " is " << ggml_type_name(t->ggml_type);
  }
}

// Q8_0 error bound per element: half a quantization step of the stored (fp16) scale, plus the
// error from rounding the scale itself to fp16.
void expect_q8_0_close(const std::vector<float>& want, const std::vector<float>& got, const std::string& name) {
  for (size_t b = 0; b < want.size() / 32; ++b) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(want[b * 32 + i]));
    const float d = amax / 127.0f, d16 = fp16_to_fp32(fp32_to_fp16(d));
    const float bound = d16 / 2 + 127.0f * std::fabs(d - d16) + 1e-6f * amax;
    for (size_t i = 0; i < 32; ++i)
      ASSERT_LE(std::fabs(want[b * 32 + i] - got[b * 32 + i]), bound) << name << " element " << b * 32 + i;
  }
}

TEST_P(ConvertFixture, ValuesMatchTheTransformsBitExactly) {
  const Geometry g(text_);
  for (const Expect& e : expected()) {
    const GgufTensorInfo* t = file_.find_tensor(e.gguf);
    const SafetensorsTensor* s = model_->find(e.hf);
    ASSERT_TRUE(t && s) << e.gguf;
    const std::vector<float> want = expected_values(e.kind, st_floats(*s), s->shape, g);
    ASSERT_EQ(static_cast<int64_t>(want.size()), t->nelements()) << e.gguf;
    const std::optional<DType> dt = t->dtype();
    ASSERT_TRUE(dt) << e.gguf;
    if (*dt == DType::F32 && e.kind == Kind::COPY) {
      ASSERT_EQ(t->nbytes, s->data.size()) << e.gguf;
      EXPECT_EQ(std::memcmp(t->data, s->data.data(), s->data.size()), 0) << e.gguf << ": F32 bytes differ from input";
    } else if (*dt == DType::Q8_0) {
      expect_q8_0_close(want, gguf_floats(*t), e.gguf);
    } else {
      // F32 exactly, F16 / BF16 exactly the rounding of the F32 value.
      std::vector<uint8_t> bytes(row_bytes(*dt, t->nelements()));
      from_float(*dt, want.data(), bytes.data(), t->nelements());
      EXPECT_EQ(std::memcmp(t->data, bytes.data(), bytes.size()), 0) << e.gguf << " (" << dtype_name(*dt) << ")";
    }
  }
}

TEST_P(ConvertFixture, Keys) {
  const std::string a = arch() + ".";
  const nlohmann::json& t = text_;
  auto u32 = [&](const std::string& k) { return file_.get<uint32_t>(k); };
  EXPECT_EQ(file_.get<std::string>("general.architecture").value(), arch());
  EXPECT_EQ(file_.get<std::string>("general.name").value(), GetParam().fixture);
  EXPECT_EQ(u32("general.file_type").value(), llama_ftype(GetParam().type));
  EXPECT_EQ(file_.has("general.quantization_version"), GetParam().type == DType::Q8_0);
  if (GetParam().type == DType::Q8_0) {
    EXPECT_EQ(u32("general.quantization_version").value(), 2u);
  }
  EXPECT_EQ(u32(a + "block_count").value(), t["num_hidden_layers"].get<uint32_t>() + 1);
  EXPECT_EQ(u32(a + "context_length").value(), t["max_position_embeddings"].get<uint32_t>());
  EXPECT_EQ(u32(a + "embedding_length").value(), t["hidden_size"].get<uint32_t>());
  EXPECT_EQ(file_.has(a + "feed_forward_length"), !moe());
  if (!moe()) {
    EXPECT_EQ(u32(a + "feed_forward_length").value(), t["intermediate_size"].get<uint32_t>());
  }
  EXPECT_EQ(u32(a + "attention.head_count").value(), t["num_attention_heads"].get<uint32_t>());
  EXPECT_EQ(u32(a + "attention.head_count_kv").value(), t["num_key_value_heads"].get<uint32_t>());
  EXPECT_EQ(u32(a + "attention.key_length").value(), t["head_dim"].get<uint32_t>());
  EXPECT_EQ(u32(a + "attention.value_length").value(), t["head_dim"].get<uint32_t>());
  EXPECT_EQ(file_.get<float>(a + "attention.layer_norm_rms_epsilon").value(), 1e-6f);
  EXPECT_EQ(u32(a + "rope.dimension_count").value(), 8u);  // head_dim 32 * partial_rotary_factor 0.25
  EXPECT_EQ(file_.get<float>(a + "rope.freq_base").value(), 1e7f);
  EXPECT_EQ(file_.get_array<int32_t>(a + "rope.dimension_sections").value(), (std::vector<int32_t>{2, 1, 1, 0}));
  EXPECT_EQ(u32(a + "full_attention_interval").value(), 4u);
  EXPECT_EQ(u32(a + "ssm.conv_kernel").value(), 4u);
  EXPECT_EQ(u32(a + "ssm.state_size").value(), 16u);
  EXPECT_EQ(u32(a + "ssm.group_count").value(), 2u);
  EXPECT_EQ(u32(a + "ssm.time_step_rank").value(), 4u);
  EXPECT_EQ(u32(a + "ssm.inner_size").value(), 64u);
  EXPECT_EQ(u32(a + "nextn_predict_layers").value(), 1u);
  EXPECT_EQ(u32(a + "vocab_size").value(), 384u);
  if (moe()) {
    EXPECT_EQ(u32(a + "expert_count").value(), 8u);
    EXPECT_EQ(u32(a + "expert_used_count").value(), 2u);
    EXPECT_EQ(u32(a + "expert_feed_forward_length").value(), 32u);
    EXPECT_EQ(u32(a + "expert_shared_feed_forward_length").value(), 48u);
  } else {
    EXPECT_FALSE(file_.has(a + "expert_count"));
  }
  EXPECT_EQ(file_.get<std::string>("tokenizer.ggml.model").value(), "gpt2");
  EXPECT_EQ(file_.get_array<std::string>("tokenizer.ggml.tokens")->size(), 384u);
  EXPECT_EQ(u32("tokenizer.ggml.eos_token_id").value(), 0u);
}

TEST_P(ConvertFixture, WriteReadWriteIsByteIdentical) {
  const std::string again = out_ + ".again.gguf";
  ASSERT_TRUE(file_.write(again).ok());
  EXPECT_EQ(read_bytes(again), read_bytes(out_));
  Result<uint64_t> size = file_.file_size();
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, read_bytes(out_).size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertFixture,
                         ::testing::Values(Case{"qwen35-dense-tiny", DType::F32}, Case{"qwen35-dense-tiny", DType::F16},
                                           Case{"qwen35-dense-tiny", DType::BF16},
                                           Case{"qwen35-dense-tiny", DType::Q8_0}, Case{"qwen35-moe-tiny", DType::F32},
                                           Case{"qwen35-moe-tiny", DType::F16}, Case{"qwen35-moe-tiny", DType::BF16},
                                           Case{"qwen35-moe-tiny", DType::Q8_0}),
                         case_name);

TEST(Convert, NoMtpDropsTheNextnBlock) {
  ConvertOptions o;
  o.model_dir = fixture_dir("qwen35-dense-tiny");
  o.output = tmp_dir() + "/nomtp.gguf";
  o.outtype = DType::F32;
  o.include_mtp = false;
  Result<ConvertReport> r = convert_checkpoint(o);
  ASSERT_TRUE(r.ok()) << r.error();
  Result<GgufFile> f = GgufFile::open(o.output);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->get<uint32_t>("qwen35.block_count").value(), 4u);
  EXPECT_FALSE(f->has("qwen35.nextn_predict_layers"));
  for (const GgufTensorInfo& t : f->tensors()) EXPECT_EQ(t.name.rfind("blk.4.", 0), std::string::npos) << t.name;
  EXPECT_EQ(f->tensors().size(), 56u);  // 71 - 15 MTP tensors
}

TEST(Convert, AutoOuttypeOfAnF32CheckpointIsF16AndDryRunWritesNothing) {
  ConvertOptions o;
  o.model_dir = fixture_dir("qwen35-moe-tiny");
  o.output = tmp_dir() + "/never.gguf";
  o.dry_run = true;
  Result<ConvertReport> r = convert_checkpoint(o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->outtype, DType::F16);
  EXPECT_EQ(r->arch, "qwen35moe");
  EXPECT_EQ(r->layout.tensors().size(), 95u);
  EXPECT_FALSE(fs::exists(o.output));
}

// A BF16 (or F16) checkpoint: auto picks the same type, and 2-D weights copy bit for bit.
TEST(Convert, HalfPrecisionCheckpointsRoundTripBitExactly) {
  for (DType half : {DType::BF16, DType::F16}) {
    const std::string dir = tmp_dir(std::string(dtype_name(half))), src = fixture_dir("qwen35-moe-tiny");
    copy_fixture_meta(src, dir);
    std::vector<StTensor> ts = copy_tensors(std::move(SafetensorsModel::open(src)).value());
    for (StTensor& t : ts) {
      std::vector<float> f(t.bytes.size() / 4);
      std::memcpy(f.data(), t.bytes.data(), t.bytes.size());
      t.bytes.resize(f.size() * 2);
      from_float(half, f.data(), t.bytes.data(), static_cast<int64_t>(f.size()));
      t.dtype = half == DType::BF16 ? "BF16" : "F16";
    }
    write_safetensors(dir + "/model.safetensors", ts);
    ConvertOptions o;
    o.model_dir = dir;
    o.output = dir + "/out.gguf";
    Result<ConvertReport> r = convert_checkpoint(o);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->outtype, half);
    Result<GgufFile> f = GgufFile::open(o.output);
    Result<SafetensorsModel> m = SafetensorsModel::open(dir);
    ASSERT_TRUE(f.ok() && m.ok());
    const std::pair<const char*, const char*> same[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"blk.3.attn_q.weight", "model.layers.3.self_attn.q_proj.weight"},
        {"blk.4.ffn_down_exps.weight", "mtp.layers.0.mlp.experts.down_proj"},
        {"blk.0.ffn_down_shexp.weight", "model.layers.0.mlp.shared_expert.down_proj.weight"}};
    for (const auto& [g, h] : same) {
      const GgufTensorInfo* t = f->find_tensor(g);
      const SafetensorsTensor* st = m->find(h);
      ASSERT_TRUE(t && st) << g;
      EXPECT_EQ(t->dtype(), half) << g;
      ASSERT_EQ(t->nbytes, st->data.size()) << g;
      EXPECT_EQ(std::memcmp(t->data, st->data.data(), t->nbytes), 0) << g;
    }
    // Norms become F32 1 + w, computed from the half-precision input.
    const GgufTensorInfo* n = f->find_tensor("blk.0.attn_norm.weight");
    const std::vector<float> w = st_floats(*m->find("model.layers.0.input_layernorm.weight")), got = gguf_floats(*n);
    for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(got[i], w[i] + 1.0f);
  }
}

}  // namespace
}  // namespace gl::tools::test
