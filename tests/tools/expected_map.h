// expected_map.h - the tests' own statement of llama.cpp's qwen35 conversion, written from
// conversion/qwen.py independently of gguf-tools: which GGUF tensor comes from which HF tensor,
// its ggml shape, its output type, and its values (the V-head reorder in llama.cpp's forward
// form: view the head axis as [Hk, r], swap to [r, Hk]).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml-lite/dtype.h"

namespace gl::tools::test {

enum class Kind { COPY, NORM1, A_LOG, DT, QKV, Z, BA, CONV, OUT, EXP_GATE, EXP_UP, EXP_DOWN, SHEXP_GATE };

struct Expect {
  std::string gguf;
  std::string hf;  // full safetensors name
  Kind kind;
};

struct Geometry {
  int64_t H, Hk, Hv, Dk, Dv, Kc, n_layer;
  explicit Geometry(const nlohmann::json& t)
      : H(t["hidden_size"]),
        Hk(t["linear_num_key_heads"]),
        Hv(t["linear_num_value_heads"]),
        Dk(t["linear_key_head_dim"]),
        Dv(t["linear_value_head_dim"]),
        Kc(t["linear_conv_kernel_dim"]),
        n_layer(t["num_hidden_layers"]) {}
  int64_t r() const { return Hv / Hk; }
  int64_t qk() const { return 2 * Hk * Dk; }
};

// Per-layer HF suffix -> GGUF suffix (experts' gate_up_proj yields two tensors).
inline std::vector<std::pair<std::string, Kind>> gguf_for_layer_suffix(const std::string& s) {
  static const std::vector<std::tuple<std::string, std::string, Kind>> table = {
      {"input_layernorm.weight", "attn_norm.weight", Kind::NORM1},
      {"post_attention_layernorm.weight", "post_attention_norm.weight", Kind::NORM1},
      {"self_attn.q_proj.weight", "attn_q.weight", Kind::COPY},
      {"self_attn.k_proj.weight", "attn_k.weight", Kind::COPY},
      {"self_attn.v_proj.weight", "attn_v.weight", Kind::COPY},
      {"self_attn.o_proj.weight", "attn_output.weight", Kind::COPY},
      {"self_attn.q_norm.weight", "attn_q_norm.weight", Kind::NORM1},
      {"self_attn.k_norm.weight", "attn_k_norm.weight", Kind::NORM1},
      {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight", Kind::QKV},
      {"linear_attn.in_proj_z.weight", "attn_gate.weight", Kind::Z},
      {"linear_attn.in_proj_b.weight", "ssm_beta.weight", Kind::BA},
      {"linear_attn.in_proj_a.weight", "ssm_alpha.weight", Kind::BA},
      {"linear_attn.conv1d.weight", "ssm_conv1d.weight", Kind::CONV},
      {"linear_attn.dt_bias", "ssm_dt.bias", Kind::DT},
      {"linear_attn.A_log", "ssm_a", Kind::A_LOG},
      {"linear_attn.norm.weight", "ssm_norm.weight", Kind::COPY},
      {"linear_attn.out_proj.weight", "ssm_out.weight", Kind::OUT},
      {"mlp.gate_proj.weight", "ffn_gate.weight", Kind::COPY},
      {"mlp.up_proj.weight", "ffn_up.weight", Kind::COPY},
      {"mlp.down_proj.weight", "ffn_down.weight", Kind::COPY},
      {"mlp.gate.weight", "ffn_gate_inp.weight", Kind::COPY},
      {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", Kind::EXP_GATE},
      {"mlp.experts.gate_up_proj", "ffn_up_exps.weight", Kind::EXP_UP},
      {"mlp.experts.down_proj", "ffn_down_exps.weight", Kind::EXP_DOWN},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", Kind::COPY},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", Kind::COPY},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", Kind::COPY},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", Kind::SHEXP_GATE},
  };
  std::vector<std::pair<std::string, Kind>> out;
  for (const auto& [hf, gguf, kind] : table)
    if (hf == s) out.push_back({gguf, kind});
  return out;
}

// Every tensor the converter must write, from reference.json's param_names (transformers'
// text-model names "model.*") plus the MTP block. vl: the checkpoint stores model.language_model.*.
inline std::vector<Expect> expected_tensors(const std::vector<std::string>& param_names, const Geometry& g, bool tied,
                                            bool vl) {
  const std::string trunk = vl ? "model.language_model." : "model.";
  const std::string last = "model.layers." + std::to_string(g.n_layer - 1) + ".";  // a full-attention layer
  const std::string mtp_blk = "blk." + std::to_string(g.n_layer) + ".";
  std::vector<Expect> out;
  for (const std::string& n : param_names) {
    if (n == "lm_head.weight") {
      if (!tied) out.push_back({"output.weight", n, Kind::COPY});
    } else if (n == "model.embed_tokens.weight") {
      out.push_back({"token_embd.weight", trunk + "embed_tokens.weight", Kind::COPY});
    } else if (n == "model.norm.weight") {
      out.push_back({"output_norm.weight", trunk + "norm.weight", Kind::NORM1});
    } else {
      const size_t dot = n.find('.', 13);  // after "model.layers."
      const std::string layer = n.substr(13, dot - 13), suffix = n.substr(dot + 1);
      for (const auto& [gguf, kind] : gguf_for_layer_suffix(suffix)) {
        out.push_back({"blk." + layer + "." + gguf, trunk + "layers." + layer + "." + suffix, kind});
        if (n.rfind(last, 0) == 0) out.push_back({mtp_blk + gguf, "mtp.layers.0." + suffix, kind});
      }
    }
  }
  out.push_back({mtp_blk + "nextn.eh_proj.weight", "mtp.fc.weight", Kind::COPY});
  out.push_back({mtp_blk + "nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight", Kind::NORM1});
  out.push_back({mtp_blk + "nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight", Kind::NORM1});
  out.push_back({mtp_blk + "nextn.shared_head_norm.weight", "mtp.norm.weight", Kind::NORM1});
  return out;
}

// ggml ne of the GGUF tensor from the PyTorch shape of its source.
inline std::vector<int64_t> expected_ne(Kind k, const std::vector<int64_t>& src) {
  switch (k) {
    case Kind::CONV: return {src[2], src[0]};  // [C, 1, Kc] -> {Kc, C}
    case Kind::EXP_GATE:
    case Kind::EXP_UP: return {src[2], src[1] / 2, src[0]};  // [E, 2Fe, H] -> {H, Fe, E}
    case Kind::SHEXP_GATE: return {src[1], 1};               // [1, H] -> {H, 1}, as llama.cpp writes it
    default: return {src.rbegin(), src.rend()};
  }
}

// llama.cpp's rule for tensors that stay F32 (converter prepare_tensors).
inline bool stays_f32(const std::string& name, size_t n_dims) {
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return n_dims <= 1 || ends("_norm.weight") || !ends(".weight") || name.find("ffn_gate_inp") != std::string::npos ||
         name.find("ssm_conv1d") != std::string::npos;
}

// llama.cpp's _reorder_v_heads, forward: grouped head j = g * r + i goes to p = i * Hk + g.
inline int64_t tiled_position(int64_t j, int64_t Hk, int64_t r) { return (j % r) * Hk + j / r; }

// Moves n_heads blocks of `block` elements starting at `start` to their tiled positions.
inline std::vector<float> reorder_blocks(const std::vector<float>& x, size_t start, int64_t n_heads, size_t block,
                                         const Geometry& g) {
  std::vector<float> y = x;
  for (int64_t j = 0; j < n_heads; ++j) {
    const size_t p = static_cast<size_t>(tiled_position(j, g.Hk, g.r()));
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(j) * block), block,
                y.begin() + static_cast<std::ptrdiff_t>(start + p * block));
  }
  return y;
}

// The F32 values the GGUF tensor must hold, from the HF values x of shape src.
inline std::vector<float> expected_values(Kind k, const std::vector<float>& x, const std::vector<int64_t>& src,
                                          const Geometry& g) {
  const auto H = static_cast<size_t>(g.H), Dv = static_cast<size_t>(g.Dv), Kc = static_cast<size_t>(g.Kc);
  const auto qk = static_cast<size_t>(g.qk());
  std::vector<float> y;
  switch (k) {
    case Kind::COPY:
    case Kind::EXP_DOWN:
    case Kind::SHEXP_GATE: return x;
    case Kind::NORM1:
      y = x;
      for (float& v : y) v += 1.0f;
      return y;
    case Kind::DT: return reorder_blocks(x, 0, g.Hv, 1, g);
    case Kind::A_LOG:
      y = reorder_blocks(x, 0, g.Hv, 1, g);
      for (float& v : y) v = -std::exp(v);
      return y;
    case Kind::QKV: return reorder_blocks(x, qk * H, g.Hv, Dv * H, g);
    case Kind::Z: return reorder_blocks(x, 0, g.Hv, Dv * H, g);
    case Kind::BA: return reorder_blocks(x, 0, g.Hv, H, g);
    case Kind::CONV: return reorder_blocks(x, qk * Kc, g.Hv, Dv * Kc, g);
    case Kind::OUT: {
      y = x;
      const size_t cols = static_cast<size_t>(g.Hv) * Dv;
      for (size_t row = 0; row < H; ++row) {
        std::vector<float> seg(x.begin() + static_cast<std::ptrdiff_t>(row * cols),
                               x.begin() + static_cast<std::ptrdiff_t>((row + 1) * cols));
        seg = reorder_blocks(seg, 0, g.Hv, Dv, g);
        std::copy(seg.begin(), seg.end(), y.begin() + static_cast<std::ptrdiff_t>(row * cols));
      }
      return y;
    }
    case Kind::EXP_GATE:
    case Kind::EXP_UP: {
      const auto E = static_cast<size_t>(src[0]), Fe = static_cast<size_t>(src[1] / 2), h = static_cast<size_t>(src[2]);
      const size_t off = k == Kind::EXP_UP ? Fe : 0;
      for (size_t e = 0; e < E; ++e)
        for (size_t f = 0; f < Fe; ++f)
          for (size_t c = 0; c < h; ++c) y.push_back(x[(e * 2 * Fe + off + f) * h + c]);
      return y;
    }
  }
  return y;
}

}  // namespace gl::tools::test
