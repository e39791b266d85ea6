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
Status check_layer_pattern(const HfConfig& c, const Hparams& d) {
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

}  // namespace

int64_t TensorSpec::nelements() const {
  int64_t n = 1;
  for (int64_t x : ne) n *= x;
  return n;
}

Result<Hparams> hparams_from_hf(const HfConfig& c) {
  Result<bool> moe = hf_is_moe(c);
  if (!moe) return Error(moe.error());
  if (c.rope.mrope_section.size() > 4)
    return Error(fmt::format("mrope_section has {} entries, at most 4", c.rope.mrope_section.size()));
  Hparams hp;
  hp.arch = *moe ? qwen35::Arch::MOE : qwen35::Arch::DENSE;
  hp.n_layer = static_cast<int>(c.num_hidden_layers);
  hp.n_nextn = static_cast<int>(c.mtp_num_hidden_layers);
  hp.n_embd = c.hidden_size;
  hp.n_vocab = c.vocab_size;
  hp.n_ctx_train = c.max_position_embeddings;
  hp.eps = static_cast<float>(c.rms_norm_eps);
  hp.tied_embeddings = c.tie_word_embeddings;
  hp.n_head = static_cast<int>(c.num_attention_heads);
  hp.n_head_kv = static_cast<int>(c.num_key_value_heads);
  hp.head_dim = c.head_dim;
  hp.rope_dims = static_cast<int>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
  hp.rope_base = static_cast<float>(c.rope.theta);
  if (!c.rope.mrope_section.empty()) {
    hp.rope_sections = {0, 0, 0, 0};
    for (size_t i = 0; i < c.rope.mrope_section.size(); ++i)
      hp.rope_sections[i] = static_cast<int32_t>(c.rope.mrope_section[i]);
  }
  hp.full_attn_interval = static_cast<int>(c.full_attention_interval);
  hp.conv_kernel = c.linear_conv_kernel_dim;
  hp.d_k = c.linear_key_head_dim;
  hp.n_k_heads = c.linear_num_key_heads;
  hp.n_v_heads = c.linear_num_value_heads;
  hp.d_v = c.linear_value_head_dim;
  hp.n_ff = *moe ? 0 : c.intermediate_size;
  hp.n_expert = static_cast<int>(c.num_experts);
  hp.n_expert_used = static_cast<int>(c.num_experts_per_tok);
  hp.n_ff_exp = c.moe_intermediate_size;
  hp.n_ff_shexp = c.shared_expert_intermediate_size;
  GLT_TRY(hp.validate());
  GLT_TRY(check_layer_pattern(c, hp));
  return hp;
}

namespace {

struct HfSource {
  Role role;
  Xform xform;
  std::string_view leaf;  // after the layer prefix ("layers.3.", "mtp.layers.0.") or whole
  bool top_level = false;
};

// The Hugging Face side of each GGUF weight (llama.cpp conversion/qwen.py).
HfSource hf_source(qwen35::WeightId id) {
  using W = qwen35::WeightId;
  switch (id) {
    case W::TOKEN_EMBD: return {Role::EMBEDDING, Xform::COPY, "embed_tokens.weight"};
    case W::OUTPUT_NORM: return {Role::NORM, Xform::ADD_ONE, "norm.weight"};
    case W::OUTPUT: return {Role::EMBEDDING, Xform::COPY, "lm_head.weight", true};
    case W::ATTN_NORM: return {Role::NORM, Xform::ADD_ONE, "input_layernorm.weight"};
    case W::POST_ATTN_NORM: return {Role::NORM, Xform::ADD_ONE, "post_attention_layernorm.weight"};
    // attn_q keeps HF's per-head interleaving [q_h | gate_h]; the graph splits it.
    case W::ATTN_Q: return {Role::WEIGHT, Xform::COPY, "self_attn.q_proj.weight"};
    case W::ATTN_K: return {Role::WEIGHT, Xform::COPY, "self_attn.k_proj.weight"};
    case W::ATTN_V: return {Role::WEIGHT, Xform::COPY, "self_attn.v_proj.weight"};
    case W::ATTN_OUTPUT: return {Role::WEIGHT, Xform::COPY, "self_attn.o_proj.weight"};
    case W::ATTN_Q_NORM: return {Role::NORM, Xform::ADD_ONE, "self_attn.q_norm.weight"};
    case W::ATTN_K_NORM: return {Role::NORM, Xform::ADD_ONE, "self_attn.k_norm.weight"};
    case W::SSM_QKV: return {Role::WEIGHT, Xform::V_QKV_ROWS, "linear_attn.in_proj_qkv.weight"};
    case W::SSM_GATE: return {Role::WEIGHT, Xform::V_ROWS, "linear_attn.in_proj_z.weight"};
    case W::SSM_CONV1D: return {Role::CONV1D, Xform::V_CONV, "linear_attn.conv1d.weight"};
    case W::SSM_DT: return {Role::SSM_DT, Xform::V_HEADS, "linear_attn.dt_bias"};
    case W::SSM_A: return {Role::SSM_A, Xform::V_HEADS_A, "linear_attn.A_log"};
    case W::SSM_BETA: return {Role::WEIGHT, Xform::V_HEAD_ROWS, "linear_attn.in_proj_b.weight"};
    case W::SSM_ALPHA: return {Role::WEIGHT, Xform::V_HEAD_ROWS, "linear_attn.in_proj_a.weight"};
    case W::SSM_NORM: return {Role::SSM_NORM, Xform::COPY, "linear_attn.norm.weight"};
    case W::SSM_OUT: return {Role::WEIGHT, Xform::V_COLS, "linear_attn.out_proj.weight"};
    case W::FFN_GATE: return {Role::WEIGHT, Xform::COPY, "mlp.gate_proj.weight"};
    case W::FFN_UP: return {Role::WEIGHT, Xform::COPY, "mlp.up_proj.weight"};
    case W::FFN_DOWN: return {Role::WEIGHT, Xform::COPY, "mlp.down_proj.weight"};
    case W::FFN_GATE_INP: return {Role::WEIGHT, Xform::COPY, "mlp.gate.weight"};
    case W::FFN_GATE_EXPS: return {Role::WEIGHT, Xform::EXPERTS_GATE, "mlp.experts"};
    case W::FFN_UP_EXPS: return {Role::WEIGHT, Xform::EXPERTS_UP, "mlp.experts"};
    case W::FFN_DOWN_EXPS: return {Role::WEIGHT, Xform::EXPERTS_DOWN, "mlp.experts"};
    case W::FFN_GATE_INP_SHEXP: return {Role::WEIGHT, Xform::SQUEEZE, "mlp.shared_expert_gate.weight"};
    case W::FFN_GATE_SHEXP: return {Role::WEIGHT, Xform::COPY, "mlp.shared_expert.gate_proj.weight"};
    case W::FFN_UP_SHEXP: return {Role::WEIGHT, Xform::COPY, "mlp.shared_expert.up_proj.weight"};
    case W::FFN_DOWN_SHEXP: return {Role::WEIGHT, Xform::COPY, "mlp.shared_expert.down_proj.weight"};
    case W::NEXTN_EH_PROJ: return {Role::WEIGHT, Xform::COPY, "mtp.fc.weight", true};
    case W::NEXTN_ENORM: return {Role::NORM, Xform::ADD_ONE, "mtp.pre_fc_norm_embedding.weight", true};
    case W::NEXTN_HNORM: return {Role::NORM, Xform::ADD_ONE, "mtp.pre_fc_norm_hidden.weight", true};
    case W::NEXTN_SHARED_HEAD_NORM: return {Role::NORM, Xform::ADD_ONE, "mtp.norm.weight", true};
  }
  return {Role::WEIGHT, Xform::COPY, ""};
}

}  // namespace

std::vector<TensorSpec> tensor_specs(const Hparams& hp) {
  std::vector<TensorSpec> out;
  for (const qwen35::WeightSpec& w : qwen35::weight_layout(hp)) {
    const HfSource src = hf_source(w.id);
    // Trunk blocks are relative to the text prefix; MTP blocks sit under the top-level "mtp.".
    const bool mtp_block = w.block >= hp.n_layer;
    std::string hf(src.leaf);
    if (w.block >= 0 && !src.top_level)
      hf = mtp_block ? fmt::format("mtp.layers.{}.{}", w.block - hp.n_layer, hf)
                     : fmt::format("layers.{}.{}", w.block, hf);
    out.push_back({w.name, w.ne, src.role, src.xform, std::move(hf), src.top_level || mtp_block});
  }
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
    case DType::I32:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: break;  // the tools never write these
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

void write_model_keys(GgufFile& meta, const Hparams& hp, const std::string& name, DType file_type) {
  hp.write_gguf(meta, name, llama_ftype(file_type), dtype_traits(file_type).is_quant);
}

}  // namespace gl::tools
