// model_spec.cpp - qwen35 / qwen35moe names, shapes, keys and type rules.
#include "gguf-tools/model_spec.h"

#include <cmath>

#include <fmt/format.h>

#include "util.h"

namespace gl::tools {
namespace {

constexpr std::string_view kDenseTypes[] = {"qwen3_5", "qwen3_5_text"};
constexpr std::string_view kMoeTypes[] = {"qwen3_5_moe", "qwen3_5_moe_text"};
constexpr std::string_view kDenseArchs[] = {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"};
constexpr std::string_view kMoeArchs[] = {"Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"};

template <size_t N>
bool one_of(std::string_view s, const std::string_view (&list)[N]) {
  for (std::string_view x : list)
    if (x == s) return true;
  return false;
}

// model_type decides dense vs MoE; the architecture, when present, must agree with it.
Result<bool> hf_is_moe(const HfConfig& c) {
  const bool dense = one_of(c.model_type, kDenseTypes), moe = one_of(c.model_type, kMoeTypes);
  if (!dense && !moe)
    return Error(
        fmt::format("unsupported model_type '{}' (gguf-convert handles qwen3_5, qwen3_5_text, "
                    "qwen3_5_moe, qwen3_5_moe_text)",
                    c.model_type));
  if (!c.architecture.empty() && !one_of(c.architecture, kDenseArchs) && !one_of(c.architecture, kMoeArchs))
    return Error(
        fmt::format("unsupported architecture '{}' (supported: Qwen3_5ForCausalLM, "
                    "Qwen3_5ForConditionalGeneration, Qwen3_5MoeForCausalLM, "
                    "Qwen3_5MoeForConditionalGeneration)",
                    c.architecture));
  if (!c.architecture.empty() && one_of(c.architecture, kMoeArchs) != moe)
    return Error(fmt::format("architecture '{}' does not match model_type '{}'", c.architecture, c.model_type));
  if (moe != c.is_moe())
    return Error(fmt::format("model_type '{}' but num_experts is {}", c.model_type, c.num_experts));
  return moe;
}

// The GGUF has no per-layer pattern key: llama.cpp derives it from full_attention_interval.
Status check_layer_pattern(const HfConfig& c, const ModelDims& d) {
  for (int64_t il = 0; il < d.n_layer; ++il) {
    const bool recurrent = c.layer_types[static_cast<size_t>(il)] == HfLayerType::LINEAR_ATTENTION;
    if (recurrent != d.is_recurrent(il))
      return Error(
          fmt::format("layer_types[{}] is {} but full_attention_interval {} implies {}; GGUF "
                      "cannot store this layer pattern",
                      il, recurrent ? "linear" : "full", d.full_attn_interval, recurrent ? "full" : "linear"));
  }
  return {};
}

Status check(bool ok, std::string_view what) {
  if (ok) return {};
  return Error(fmt::format("invalid model dimensions: {}", what));
}

}  // namespace

int64_t TensorSpec::nelements() const {
  int64_t n = 1;
  for (int64_t x : ne) n *= x;
  return n;
}

Result<ModelDims> dims_from_hf(const HfConfig& c) {
  Result<bool> moe = hf_is_moe(c);
  if (!moe) return Error(moe.error());
  ModelDims d;
  d.arch = *moe ? "qwen35moe" : "qwen35";
  d.n_layer = c.num_hidden_layers;
  d.n_mtp = c.mtp_num_hidden_layers;
  d.n_embd = c.hidden_size;
  d.n_vocab = c.vocab_size;
  d.n_ctx = c.max_position_embeddings;
  d.n_ff = *moe ? 0 : c.intermediate_size;
  d.n_head = c.num_attention_heads;
  d.n_head_kv = c.num_key_value_heads;
  d.head_dim = c.head_dim;
  d.n_rot = static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
  d.rope_theta = c.rope.theta;
  if (c.rope.mrope_section.size() > 4)
    return Error(fmt::format("mrope_section has {} entries, at most 4", c.rope.mrope_section.size()));
  if (!c.rope.mrope_section.empty()) {
    d.rope_sections = {0, 0, 0, 0};
    for (size_t i = 0; i < c.rope.mrope_section.size(); ++i)
      d.rope_sections[i] = static_cast<int32_t>(c.rope.mrope_section[i]);
  }
  d.rms_eps = c.rms_norm_eps;
  d.full_attn_interval = c.full_attention_interval;
  d.ssm_conv_kernel = c.linear_conv_kernel_dim;
  d.ssm_d_state = c.linear_key_head_dim;
  d.ssm_n_group = c.linear_num_key_heads;
  d.ssm_dt_rank = c.linear_num_value_heads;
  d.ssm_head_v_dim = c.linear_value_head_dim;
  d.n_expert = c.num_experts;
  d.n_expert_used = c.num_experts_per_tok;
  d.n_ff_exp = c.moe_intermediate_size;
  d.n_ff_shexp = c.shared_expert_intermediate_size;
  d.tied_embeddings = c.tie_word_embeddings;
  GLT_TRY(validate_dims(d));
  GLT_TRY(check_layer_pattern(c, d));
  return d;
}

Status validate_dims(const ModelDims& d) {
  GL_TRY(check(d.arch == "qwen35" || d.arch == "qwen35moe", "arch must be qwen35 or qwen35moe"));
  GL_TRY(check(d.n_layer > 0 && d.n_mtp >= 0 && d.n_embd > 0 && d.n_vocab > 0, "layers, n_embd, n_vocab"));
  GL_TRY(check(d.n_head > 0 && d.n_head_kv > 0 && d.n_head % d.n_head_kv == 0, "attention heads"));
  GL_TRY(check(d.head_dim > 0 && d.n_rot > 0 && d.n_rot <= d.head_dim, "head_dim / rope dims"));
  GL_TRY(check(d.full_attn_interval > 0, "full_attention_interval"));
  GL_TRY(check(d.ssm_conv_kernel > 0 && d.ssm_d_state > 0 && d.ssm_head_v_dim > 0, "GDN head sizes"));
  GL_TRY(check(d.ssm_n_group > 0 && d.ssm_dt_rank > 0 && d.ssm_dt_rank % d.ssm_n_group == 0,
               "linear_num_value_heads must be a multiple of linear_num_key_heads"));
  if (d.arch == "qwen35moe") {
    GL_TRY(check(d.n_expert > 0 && d.n_expert_used > 0 && d.n_expert_used <= d.n_expert, "experts"));
    return check(d.n_ff_exp > 0 && d.n_ff_shexp > 0, "expert / shared expert widths");
  }
  return check(d.n_expert == 0 && d.n_ff > 0, "a dense model needs intermediate_size and no experts");
}

namespace {

// Appends the tensors of one block; hf is the HF prefix of the layer ("layers.3." or
// "mtp.layers.0.", the latter top-level).
class SpecBuilder {
 public:
  SpecBuilder(const ModelDims& d, std::vector<TensorSpec>& out) : d_(d), out_(out) {}

  void add(std::string name, std::vector<int64_t> ne, Role role, Xform x, std::string hf, bool top = false) {
    out_.push_back({std::move(name), std::move(ne), role, x, std::move(hf), top});
  }

  void block(int64_t b, const std::string& hf, bool top) {
    const std::string p = fmt::format("blk.{}.", b);
    const int64_t H = d_.n_embd;
    add(p + "attn_norm.weight", {H}, Role::NORM, Xform::ADD_ONE, hf + "input_layernorm.weight", top);
    if (d_.is_recurrent(b))
      gdn(p, hf, top);
    else
      attention(p, hf, top);
    add(p + "post_attention_norm.weight", {H}, Role::NORM, Xform::ADD_ONE, hf + "post_attention_layernorm.weight", top);
    if (d_.is_moe())
      moe(p, hf, top);
    else
      dense_ffn(p, hf, top);
  }

  void mtp_extras(int64_t b) {
    const std::string p = fmt::format("blk.{}.nextn.", b);
    const int64_t H = d_.n_embd;
    add(p + "eh_proj.weight", {2 * H, H}, Role::WEIGHT, Xform::COPY, "mtp.fc.weight", true);
    add(p + "enorm.weight", {H}, Role::NORM, Xform::ADD_ONE, "mtp.pre_fc_norm_embedding.weight", true);
    add(p + "hnorm.weight", {H}, Role::NORM, Xform::ADD_ONE, "mtp.pre_fc_norm_hidden.weight", true);
    add(p + "shared_head_norm.weight", {H}, Role::NORM, Xform::ADD_ONE, "mtp.norm.weight", true);
  }

 private:
  void attention(const std::string& p, const std::string& hf, bool top) {
    const int64_t H = d_.n_embd, hd = d_.head_dim, q = d_.n_head * hd, kv = d_.n_head_kv * hd;
    const std::string a = hf + "self_attn.";
    // attn_q keeps HF's per-head interleaving [q_h | gate_h]; the graph splits it.
    add(p + "attn_q.weight", {H, 2 * q}, Role::WEIGHT, Xform::COPY, a + "q_proj.weight", top);
    add(p + "attn_k.weight", {H, kv}, Role::WEIGHT, Xform::COPY, a + "k_proj.weight", top);
    add(p + "attn_v.weight", {H, kv}, Role::WEIGHT, Xform::COPY, a + "v_proj.weight", top);
    add(p + "attn_output.weight", {q, H}, Role::WEIGHT, Xform::COPY, a + "o_proj.weight", top);
    add(p + "attn_q_norm.weight", {hd}, Role::NORM, Xform::ADD_ONE, a + "q_norm.weight", top);
    add(p + "attn_k_norm.weight", {hd}, Role::NORM, Xform::ADD_ONE, a + "k_norm.weight", top);
  }

  void gdn(const std::string& p, const std::string& hf, bool top) {
    const int64_t H = d_.n_embd, Hv = d_.ssm_dt_rank, vdim = d_.ssm_inner();
    const std::string l = hf + "linear_attn.";
    add(p + "attn_qkv.weight", {H, d_.conv_channels()}, Role::WEIGHT, Xform::V_QKV_ROWS, l + "in_proj_qkv.weight", top);
    add(p + "attn_gate.weight", {H, vdim}, Role::WEIGHT, Xform::V_ROWS, l + "in_proj_z.weight", top);
    add(p + "ssm_conv1d.weight", {d_.ssm_conv_kernel, d_.conv_channels()}, Role::CONV1D, Xform::V_CONV,
        l + "conv1d.weight", top);
    add(p + "ssm_dt.bias", {Hv}, Role::SSM_DT, Xform::V_HEADS, l + "dt_bias", top);
    add(p + "ssm_a", {Hv}, Role::SSM_A, Xform::V_HEADS_A, l + "A_log", top);
    add(p + "ssm_beta.weight", {H, Hv}, Role::WEIGHT, Xform::V_HEAD_ROWS, l + "in_proj_b.weight", top);
    add(p + "ssm_alpha.weight", {H, Hv}, Role::WEIGHT, Xform::V_HEAD_ROWS, l + "in_proj_a.weight", top);
    add(p + "ssm_norm.weight", {d_.ssm_head_v_dim}, Role::SSM_NORM, Xform::COPY, l + "norm.weight", top);
    add(p + "ssm_out.weight", {vdim, H}, Role::WEIGHT, Xform::V_COLS, l + "out_proj.weight", top);
  }

  void dense_ffn(const std::string& p, const std::string& hf, bool top) {
    const int64_t H = d_.n_embd, F = d_.n_ff;
    add(p + "ffn_gate.weight", {H, F}, Role::WEIGHT, Xform::COPY, hf + "mlp.gate_proj.weight", top);
    add(p + "ffn_up.weight", {H, F}, Role::WEIGHT, Xform::COPY, hf + "mlp.up_proj.weight", top);
    add(p + "ffn_down.weight", {F, H}, Role::WEIGHT, Xform::COPY, hf + "mlp.down_proj.weight", top);
  }

  void moe(const std::string& p, const std::string& hf, bool top) {
    const int64_t H = d_.n_embd, E = d_.n_expert, Fe = d_.n_ff_exp, Fs = d_.n_ff_shexp;
    const std::string m = hf + "mlp.";
    add(p + "ffn_gate_inp.weight", {H, E}, Role::WEIGHT, Xform::COPY, m + "gate.weight", top);
    add(p + "ffn_gate_exps.weight", {H, Fe, E}, Role::WEIGHT, Xform::EXPERTS_GATE, m + "experts", top);
    add(p + "ffn_up_exps.weight", {H, Fe, E}, Role::WEIGHT, Xform::EXPERTS_UP, m + "experts", top);
    add(p + "ffn_down_exps.weight", {Fe, H, E}, Role::WEIGHT, Xform::EXPERTS_DOWN, m + "experts", top);
    add(p + "ffn_gate_inp_shexp.weight", {H}, Role::WEIGHT, Xform::SQUEEZE, m + "shared_expert_gate.weight", top);
    add(p + "ffn_gate_shexp.weight", {H, Fs}, Role::WEIGHT, Xform::COPY, m + "shared_expert.gate_proj.weight", top);
    add(p + "ffn_up_shexp.weight", {H, Fs}, Role::WEIGHT, Xform::COPY, m + "shared_expert.up_proj.weight", top);
    add(p + "ffn_down_shexp.weight", {Fs, H}, Role::WEIGHT, Xform::COPY, m + "shared_expert.down_proj.weight", top);
  }

  const ModelDims& d_;
  std::vector<TensorSpec>& out_;
};

}  // namespace

std::vector<TensorSpec> tensor_specs(const ModelDims& d) {
  std::vector<TensorSpec> out;
  SpecBuilder b(d, out);
  b.add("token_embd.weight", {d.n_embd, d.n_vocab}, Role::EMBEDDING, Xform::COPY, "embed_tokens.weight");
  for (int64_t il = 0; il < d.n_layer; ++il) b.block(il, fmt::format("layers.{}.", il), false);
  for (int64_t k = 0; k < d.n_mtp; ++k) {
    b.block(d.n_layer + k, fmt::format("mtp.layers.{}.", k), true);
    if (k == 0) b.mtp_extras(d.n_layer);
  }
  b.add("output_norm.weight", {d.n_embd}, Role::NORM, Xform::ADD_ONE, "norm.weight");
  if (!d.tied_embeddings)
    b.add("output.weight", {d.n_embd, d.n_vocab}, Role::EMBEDDING, Xform::COPY, "lm_head.weight", true);
  return out;
}

// Value-head order. Hugging Face stores Gated DeltaNet value heads "grouped": value head j uses
// key head j / r (r = Hv / Hk), so j = g * r + i for key head g and i in [0, r). llama.cpp's
// converter (_LinearAttentionVReorderBase._reorder_v_heads) views the head axis as [Hk, r] and
// swaps it to [r, Hk] ("tiled"), so that ggml's broadcast of the Hk key heads (k0 k1 .. k0 k1 ..)
// lines up with the value heads: grouped head j = g * r + i moves to tiled position
// p = i * Hk + g = (j % r) * Hk + j / r. The inverse, used here to gather: the head at tiled
// position p is grouped head (p % Hk) * r + p / Hk. Example Hk = 2, Hv = 4: [v0, v2, v1, v3].
int64_t grouped_head_for_tiled(int64_t p, int64_t n_k_heads, int64_t n_v_heads) {
  const int64_t r = n_v_heads / n_k_heads;
  return (p % n_k_heads) * r + p / n_k_heads;
}

uint32_t llama_ftype(DType type) {
  switch (type) {
    case DType::F32: return 0;    // LLAMA_FTYPE_ALL_F32
    case DType::F16: return 1;    // LLAMA_FTYPE_MOSTLY_F16
    case DType::Q8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
    case DType::BF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    case DType::I32: break;
  }
  GL_ASSERT(false, "llama_ftype: not a file type");
  return 0;
}

bool keep_f32(std::string_view name, int n_dims) {
  if (n_dims <= 1 || ends_with(name, "_norm.weight") || !ends_with(name, ".weight")) return true;
  return ends_with(name, ".ffn_gate_inp.weight") || ends_with(name, ".ffn_gate_inp_shexp.weight") ||
         ends_with(name, ".ssm_conv1d.weight");
}

DType output_type(const TensorSpec& s, DType requested) {
  if (keep_f32(s.name, static_cast<int>(s.ne.size()))) return DType::F32;
  if (requested == DType::Q8_0 && s.ne[0] % kQ8_0Block != 0) return DType::F16;
  return requested;
}

void write_model_keys(GgufFile& meta, const ModelDims& d, const std::string& name, DType file_type) {
  const std::string& a = d.arch;
  auto u32 = [](int64_t v) { return GgufValue(static_cast<uint32_t>(v)); };
  meta.set("general.architecture", a);
  meta.set("general.type", "model");
  meta.set("general.name", name);
  meta.set(a + ".block_count", u32(d.n_block()));
  if (d.n_ctx > 0) meta.set(a + ".context_length", u32(d.n_ctx));
  meta.set(a + ".embedding_length", u32(d.n_embd));
  if (d.n_ff > 0) meta.set(a + ".feed_forward_length", u32(d.n_ff));
  meta.set(a + ".attention.head_count", u32(d.n_head));
  meta.set(a + ".attention.head_count_kv", u32(d.n_head_kv));
  std::vector<int32_t> sections(d.rope_sections.begin(), d.rope_sections.end());
  meta.set(a + ".rope.dimension_sections", GgufArray::of(sections));
  meta.set(a + ".rope.freq_base", static_cast<float>(d.rope_theta));
  meta.set(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(d.rms_eps));
  if (d.is_moe()) {
    meta.set(a + ".expert_count", u32(d.n_expert));
    meta.set(a + ".expert_used_count", u32(d.n_expert_used));
  }
  meta.set(a + ".attention.key_length", u32(d.head_dim));
  meta.set(a + ".attention.value_length", u32(d.head_dim));
  meta.set("general.file_type", llama_ftype(file_type));
  if (d.is_moe()) {
    meta.set(a + ".expert_feed_forward_length", u32(d.n_ff_exp));
    meta.set(a + ".expert_shared_feed_forward_length", u32(d.n_ff_shexp));
  }
  meta.set(a + ".ssm.conv_kernel", u32(d.ssm_conv_kernel));
  meta.set(a + ".ssm.state_size", u32(d.ssm_d_state));
  meta.set(a + ".ssm.group_count", u32(d.ssm_n_group));
  meta.set(a + ".ssm.time_step_rank", u32(d.ssm_dt_rank));
  meta.set(a + ".ssm.inner_size", u32(d.ssm_inner()));
  meta.set(a + ".full_attention_interval", u32(d.full_attn_interval));
  meta.set(a + ".rope.dimension_count", u32(d.n_rot));
  if (d.n_mtp > 0) meta.set(a + ".nextn_predict_layers", u32(d.n_mtp));
  meta.set(a + ".vocab_size", u32(d.n_vocab));
  if (dtype_traits(file_type).is_quant) meta.set("general.quantization_version", kQuantizationVersion);
}

}  // namespace gl::tools
