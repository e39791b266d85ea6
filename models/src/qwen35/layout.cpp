// layout.cpp - the GGUF tensor names and shapes of a Qwen3.5 model (llama.cpp's LLM_TENSOR names),
// shared by the loader and gguf-convert / gguf-synth.
#include <fmt/format.h>

#include "ggml-lite/models/qwen35_hparams.h"

namespace gl::qwen35 {
namespace {

// The name after "blk.{i}." (or the whole name for the three global tensors).
std::string_view leaf(WeightId id) {
  switch (id) {
    case WeightId::TOKEN_EMBD: return "token_embd.weight";
    case WeightId::OUTPUT_NORM: return "output_norm.weight";
    case WeightId::OUTPUT: return "output.weight";
    case WeightId::ATTN_NORM: return "attn_norm.weight";
    case WeightId::POST_ATTN_NORM: return "post_attention_norm.weight";
    case WeightId::ATTN_Q: return "attn_q.weight";
    case WeightId::ATTN_K: return "attn_k.weight";
    case WeightId::ATTN_V: return "attn_v.weight";
    case WeightId::ATTN_OUTPUT: return "attn_output.weight";
    case WeightId::ATTN_Q_NORM: return "attn_q_norm.weight";
    case WeightId::ATTN_K_NORM: return "attn_k_norm.weight";
    case WeightId::SSM_QKV: return "attn_qkv.weight";
    case WeightId::SSM_GATE: return "attn_gate.weight";
    case WeightId::SSM_CONV1D: return "ssm_conv1d.weight";
    case WeightId::SSM_DT: return "ssm_dt.bias";
    case WeightId::SSM_A: return "ssm_a";
    case WeightId::SSM_BETA: return "ssm_beta.weight";
    case WeightId::SSM_ALPHA: return "ssm_alpha.weight";
    case WeightId::SSM_NORM: return "ssm_norm.weight";
    case WeightId::SSM_OUT: return "ssm_out.weight";
    case WeightId::FFN_GATE: return "ffn_gate.weight";
    case WeightId::FFN_UP: return "ffn_up.weight";
    case WeightId::FFN_DOWN: return "ffn_down.weight";
    case WeightId::FFN_GATE_INP: return "ffn_gate_inp.weight";
    case WeightId::FFN_GATE_EXPS: return "ffn_gate_exps.weight";
    case WeightId::FFN_UP_EXPS: return "ffn_up_exps.weight";
    case WeightId::FFN_DOWN_EXPS: return "ffn_down_exps.weight";
    case WeightId::FFN_GATE_INP_SHEXP: return "ffn_gate_inp_shexp.weight";
    case WeightId::FFN_GATE_SHEXP: return "ffn_gate_shexp.weight";
    case WeightId::FFN_UP_SHEXP: return "ffn_up_shexp.weight";
    case WeightId::FFN_DOWN_SHEXP: return "ffn_down_shexp.weight";
    case WeightId::NEXTN_EH_PROJ: return "nextn.eh_proj.weight";
    case WeightId::NEXTN_ENORM: return "nextn.enorm.weight";
    case WeightId::NEXTN_HNORM: return "nextn.hnorm.weight";
    case WeightId::NEXTN_SHARED_HEAD_NORM: return "nextn.shared_head_norm.weight";
  }
  return "";
}

class LayoutBuilder {
 public:
  LayoutBuilder(const Hparams& hp, std::vector<WeightSpec>& out) : hp_(hp), out_(out) {}

  void add(WeightId id, int b, std::vector<int64_t> ne, bool required = true) {
    out_.push_back({id, b, weight_name(id, b), std::move(ne), required});
  }

  void block(int b) {
    add(WeightId::ATTN_NORM, b, {hp_.n_embd});
    if (hp_.is_recurrent(b))
      gdn(b);
    else
      attention(b);
    add(WeightId::POST_ATTN_NORM, b, {hp_.n_embd});
    if (hp_.is_moe())
      moe(b);
    else
      dense_ffn(b);
  }

  void nextn(int b) {
    const int64_t e = hp_.n_embd;
    add(WeightId::NEXTN_EH_PROJ, b, {2 * e, e});
    add(WeightId::NEXTN_ENORM, b, {e});
    add(WeightId::NEXTN_HNORM, b, {e});
    add(WeightId::NEXTN_SHARED_HEAD_NORM, b, {e}, /*required=*/false);
  }

 private:
  void attention(int b) {
    const int64_t e = hp_.n_embd, hd = hp_.head_dim, q = hp_.n_head * hd, kv = hp_.n_head_kv * hd;
    add(WeightId::ATTN_Q, b, {e, 2 * q});  // per head [query | gate], split by the graph
    add(WeightId::ATTN_K, b, {e, kv});
    add(WeightId::ATTN_V, b, {e, kv});
    add(WeightId::ATTN_OUTPUT, b, {q, e});
    add(WeightId::ATTN_Q_NORM, b, {hd});
    add(WeightId::ATTN_K_NORM, b, {hd});
  }

  void gdn(int b) {
    const int64_t e = hp_.n_embd, hv = hp_.n_v_heads, inner = hp_.ssm_inner();
    add(WeightId::SSM_QKV, b, {e, hp_.conv_dim()});
    add(WeightId::SSM_GATE, b, {e, inner});
    add(WeightId::SSM_CONV1D, b, {hp_.conv_kernel, hp_.conv_dim()});
    add(WeightId::SSM_DT, b, {hv});
    add(WeightId::SSM_A, b, {hv});
    add(WeightId::SSM_BETA, b, {e, hv});
    add(WeightId::SSM_ALPHA, b, {e, hv});
    add(WeightId::SSM_NORM, b, {hp_.d_v});
    add(WeightId::SSM_OUT, b, {inner, e});
  }

  void dense_ffn(int b) {
    const int64_t e = hp_.n_embd, f = hp_.n_ff;
    add(WeightId::FFN_GATE, b, {e, f});
    add(WeightId::FFN_UP, b, {e, f});
    add(WeightId::FFN_DOWN, b, {f, e});
  }

  void moe(int b) {
    const int64_t e = hp_.n_embd, n = hp_.n_expert, fe = hp_.n_ff_exp, fs = hp_.n_ff_shexp;
    add(WeightId::FFN_GATE_INP, b, {e, n});
    add(WeightId::FFN_GATE_EXPS, b, {e, fe, n});
    add(WeightId::FFN_UP_EXPS, b, {e, fe, n});
    add(WeightId::FFN_DOWN_EXPS, b, {fe, e, n});
    if (fs <= 0) return;  // expert_shared_feed_forward_length absent: no shared expert
    add(WeightId::FFN_GATE_INP_SHEXP, b, {e});
    add(WeightId::FFN_GATE_SHEXP, b, {e, fs});
    add(WeightId::FFN_UP_SHEXP, b, {e, fs});
    add(WeightId::FFN_DOWN_SHEXP, b, {fs, e});
  }

  const Hparams& hp_;
  std::vector<WeightSpec>& out_;
};

}  // namespace

std::string weight_name(WeightId id, int block) {
  if (block < 0) return std::string(leaf(id));
  return fmt::format("blk.{}.{}", block, leaf(id));
}

std::vector<WeightSpec> weight_layout(const Hparams& hp) {
  std::vector<WeightSpec> out;
  LayoutBuilder b(hp, out);
  b.add(WeightId::TOKEN_EMBD, -1, {hp.n_embd, hp.n_vocab});
  for (int il = 0; il < hp.n_block(); ++il) {
    b.block(il);
    if (il == hp.n_layer) b.nextn(il);  // one set of nextn tensors, on the first MTP block
  }
  b.add(WeightId::OUTPUT_NORM, -1, {hp.n_embd});
  if (!hp.tied_embeddings) b.add(WeightId::OUTPUT, -1, {hp.n_embd, hp.n_vocab});
  return out;
}

}  // namespace gl::qwen35
