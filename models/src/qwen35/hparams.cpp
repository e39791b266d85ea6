// hparams.cpp - Qwen3.5 hyperparameters from GGUF metadata (llama.cpp's keys).
#include <fmt/format.h>

#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {
namespace {

// Reads "{arch}.{key}" as an integer (files vary between u32 and i32).
Status read_int(const GgufFile& f, const std::string& arch, const char* key, int64_t& out, bool required = true) {
  const std::string full = arch + "." + key;
  if (!f.has(full)) {
    if (required) return Error(fmt::format("{}: missing key '{}'", f.name(), full));
    return {};
  }
  Result<int64_t> v = f.get_int(full);
  if (!v) return Error(v.error());
  out = *v;
  return {};
}

Status read_float(const GgufFile& f, const std::string& arch, const char* key, float& out) {
  const std::string full = arch + "." + key;
  if (!f.has(full)) return {};
  Result<float> v = f.get<float>(full);
  if (!v) return Error(v.error());
  out = *v;
  return {};
}

Status check_positive(const GgufFile& f, const std::string& arch, const char* key, int64_t v) {
  if (v <= 0) return Error(fmt::format("{}: key '{}.{}' must be positive, got {}", f.name(), arch, key, v));
  return {};
}

Status read_gdn(const GgufFile& f, const std::string& a, Hparams& hp) {
  int64_t inner = 0;
  GL_TRY(read_int(f, a, "ssm.conv_kernel", hp.conv_kernel));
  GL_TRY(read_int(f, a, "ssm.state_size", hp.d_k));
  GL_TRY(read_int(f, a, "ssm.group_count", hp.n_k_heads));
  GL_TRY(read_int(f, a, "ssm.time_step_rank", hp.n_v_heads));
  GL_TRY(read_int(f, a, "ssm.inner_size", inner));
  for (auto [k, v] : {std::pair{"ssm.conv_kernel", hp.conv_kernel},
                      {"ssm.state_size", hp.d_k},
                      {"ssm.group_count", hp.n_k_heads},
                      {"ssm.time_step_rank", hp.n_v_heads},
                      {"ssm.inner_size", inner}})
    GL_TRY(check_positive(f, a, k, v));
  if (inner % hp.n_v_heads != 0 || hp.n_v_heads % hp.n_k_heads != 0)
    return Error(fmt::format("{}: ssm.inner_size {} / time_step_rank {} / group_count {} are inconsistent", f.name(),
                             inner, hp.n_v_heads, hp.n_k_heads));
  hp.d_v = inner / hp.n_v_heads;
  return {};
}

Status read_attention(const GgufFile& f, const std::string& a, Hparams& hp) {
  int64_t n_head = 0, n_head_kv = 0, rope_dims = 0, interval = 4;
  GL_TRY(read_int(f, a, "attention.head_count", n_head));
  GL_TRY(read_int(f, a, "attention.head_count_kv", n_head_kv));
  GL_TRY(read_int(f, a, "attention.key_length", hp.head_dim));
  GL_TRY(read_int(f, a, "rope.dimension_count", rope_dims));
  GL_TRY(read_int(f, a, "full_attention_interval", interval, false));
  GL_TRY(read_float(f, a, "rope.freq_base", hp.rope_base));
  GL_TRY(read_float(f, a, "attention.layer_norm_rms_epsilon", hp.eps));
  for (auto [k, v] : {std::pair{"attention.head_count", n_head},
                      {"attention.head_count_kv", n_head_kv},
                      {"attention.key_length", hp.head_dim},
                      {"rope.dimension_count", rope_dims},
                      {"full_attention_interval", interval}})
    GL_TRY(check_positive(f, a, k, v));
  if (n_head % n_head_kv != 0 || rope_dims > hp.head_dim || rope_dims % 2 != 0)
    return Error(fmt::format("{}: head_count {} / head_count_kv {} / rope.dimension_count {} are inconsistent",
                             f.name(), n_head, n_head_kv, rope_dims));
  hp.n_head = static_cast<int>(n_head);
  hp.n_head_kv = static_cast<int>(n_head_kv);
  hp.rope_dims = static_cast<int>(rope_dims);
  hp.full_attn_interval = static_cast<int>(interval);
  return {};
}

Status read_ffn(const GgufFile& f, const std::string& a, Hparams& hp) {
  if (hp.arch == Arch::DENSE) {
    GL_TRY(read_int(f, a, "feed_forward_length", hp.n_ff));
    return check_positive(f, a, "feed_forward_length", hp.n_ff);
  }
  int64_t n_expert = 0, n_used = 0;
  GL_TRY(read_int(f, a, "expert_count", n_expert));
  GL_TRY(read_int(f, a, "expert_used_count", n_used));
  GL_TRY(read_int(f, a, "expert_feed_forward_length", hp.n_ff_exp));
  GL_TRY(read_int(f, a, "expert_shared_feed_forward_length", hp.n_ff_shexp, false));
  if (n_used <= 0 || n_used > n_expert)
    return Error(fmt::format("{}: expert_used_count {} must be in [1, expert_count {}]", f.name(), n_used, n_expert));
  GL_TRY(check_positive(f, a, "expert_feed_forward_length", hp.n_ff_exp));
  hp.n_expert = static_cast<int>(n_expert);
  hp.n_expert_used = static_cast<int>(n_used);
  return {};
}

}  // namespace

Result<Hparams> Hparams::from_gguf(const GgufFile& f) {
  Result<std::string> arch = f.get<std::string>("general.architecture");
  if (!arch) return Error(arch.error());
  Hparams hp;
  hp.arch_name = *arch;
  if (*arch == "qwen35") {
    hp.arch = Arch::DENSE;
  } else if (*arch == "qwen35moe") {
    hp.arch = Arch::MOE;
  } else {
    return Error(
        fmt::format("{}: architecture '{}' is not a Qwen3.5 model (expected qwen35 or qwen35moe)", f.name(), *arch));
  }
  const std::string& a = hp.arch_name;
  int64_t blocks = 0, nextn = 0;
  GL_TRY(read_int(f, a, "block_count", blocks));
  GL_TRY(read_int(f, a, "nextn_predict_layers", nextn, false));
  GL_TRY(read_int(f, a, "embedding_length", hp.n_embd));
  GL_TRY(read_int(f, a, "context_length", hp.n_ctx_train, false));
  if (nextn < 0 || blocks - nextn <= 0)
    return Error(
        fmt::format("{}: block_count {} and nextn_predict_layers {} leave no trunk layers", f.name(), blocks, nextn));
  GL_TRY(check_positive(f, a, "embedding_length", hp.n_embd));
  hp.n_layer = static_cast<int>(blocks - nextn);
  hp.n_nextn = static_cast<int>(nextn);
  GL_TRY(read_attention(f, a, hp));
  GL_TRY(read_gdn(f, a, hp));
  GL_TRY(read_ffn(f, a, hp));
  if (const GgufTensorInfo* emb = f.find_tensor("token_embd.weight")) hp.n_vocab = emb->ne[1];
  if (hp.n_vocab <= 0) return Error(fmt::format("{}: tensor 'token_embd.weight' is missing", f.name()));
  return hp;
}

}  // namespace gl::qwen35
