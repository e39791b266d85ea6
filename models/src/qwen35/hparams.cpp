// hparams.cpp - Qwen3.5 hyperparameters to and from GGUF metadata: the one list of llama.cpp's
// keys, read by the loader and written by gguf-convert / gguf-synth.
#include <fmt/format.h>

#include <algorithm>

#include "ggml-lite/models/qwen35_hparams.h"

namespace gl::qwen35 {
namespace {

// The {arch}.* keys (llama.cpp's LLM_KV names); general.* keys are written as they are.
constexpr const char* kBlockCount = "block_count";
constexpr const char* kContextLength = "context_length";
constexpr const char* kEmbeddingLength = "embedding_length";
constexpr const char* kFeedForwardLength = "feed_forward_length";
constexpr const char* kHeadCount = "attention.head_count";
constexpr const char* kHeadCountKv = "attention.head_count_kv";
constexpr const char* kRopeSections = "rope.dimension_sections";
constexpr const char* kRopeFreqBase = "rope.freq_base";
constexpr const char* kRmsEps = "attention.layer_norm_rms_epsilon";
constexpr const char* kExpertCount = "expert_count";
constexpr const char* kExpertUsedCount = "expert_used_count";
constexpr const char* kKeyLength = "attention.key_length";
constexpr const char* kValueLength = "attention.value_length";
constexpr const char* kExpertFfLength = "expert_feed_forward_length";
constexpr const char* kExpertSharedFfLength = "expert_shared_feed_forward_length";
constexpr const char* kSsmConvKernel = "ssm.conv_kernel";
constexpr const char* kSsmStateSize = "ssm.state_size";
constexpr const char* kSsmGroupCount = "ssm.group_count";
constexpr const char* kSsmTimeStepRank = "ssm.time_step_rank";
constexpr const char* kSsmInnerSize = "ssm.inner_size";
constexpr const char* kFullAttnInterval = "full_attention_interval";
constexpr const char* kRopeDimCount = "rope.dimension_count";
constexpr const char* kNextnLayers = "nextn_predict_layers";
constexpr const char* kVocabSize = "vocab_size";

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
  GL_TRY(read_int(f, a, kSsmConvKernel, hp.conv_kernel));
  GL_TRY(read_int(f, a, kSsmStateSize, hp.d_k));
  GL_TRY(read_int(f, a, kSsmGroupCount, hp.n_k_heads));
  GL_TRY(read_int(f, a, kSsmTimeStepRank, hp.n_v_heads));
  GL_TRY(read_int(f, a, kSsmInnerSize, inner));
  for (auto [k, v] : {std::pair{kSsmConvKernel, hp.conv_kernel},
                      {kSsmStateSize, hp.d_k},
                      {kSsmGroupCount, hp.n_k_heads},
                      {kSsmTimeStepRank, hp.n_v_heads},
                      {kSsmInnerSize, inner}})
    GL_TRY(check_positive(f, a, k, v));
  if (inner % hp.n_v_heads != 0 || hp.n_v_heads % hp.n_k_heads != 0)
    return Error(fmt::format("{}: ssm.inner_size {} / time_step_rank {} / group_count {} are inconsistent", f.name(),
                             inner, hp.n_v_heads, hp.n_k_heads));
  hp.d_v = inner / hp.n_v_heads;
  return {};
}

Status read_attention(const GgufFile& f, const std::string& a, Hparams& hp) {
  int64_t n_head = 0, n_head_kv = 0, rope_dims = 0, interval = 4;
  GL_TRY(read_int(f, a, kHeadCount, n_head));
  GL_TRY(read_int(f, a, kHeadCountKv, n_head_kv));
  GL_TRY(read_int(f, a, kKeyLength, hp.head_dim));
  GL_TRY(read_int(f, a, kRopeDimCount, rope_dims));
  GL_TRY(read_int(f, a, kFullAttnInterval, interval, false));
  GL_TRY(read_float(f, a, kRopeFreqBase, hp.rope_base));
  GL_TRY(read_float(f, a, kRmsEps, hp.eps));
  for (auto [k, v] : {std::pair{kHeadCount, n_head},
                      {kHeadCountKv, n_head_kv},
                      {kKeyLength, hp.head_dim},
                      {kRopeDimCount, rope_dims},
                      {kFullAttnInterval, interval}})
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
    GL_TRY(read_int(f, a, kFeedForwardLength, hp.n_ff));
    return check_positive(f, a, kFeedForwardLength, hp.n_ff);
  }
  int64_t n_expert = 0, n_used = 0;
  GL_TRY(read_int(f, a, kExpertCount, n_expert));
  GL_TRY(read_int(f, a, kExpertUsedCount, n_used));
  GL_TRY(read_int(f, a, kExpertFfLength, hp.n_ff_exp));
  GL_TRY(read_int(f, a, kExpertSharedFfLength, hp.n_ff_shexp, false));
  if (n_used <= 0 || n_used > n_expert)
    return Error(fmt::format("{}: expert_used_count {} must be in [1, expert_count {}]", f.name(), n_used, n_expert));
  GL_TRY(check_positive(f, a, kExpertFfLength, hp.n_ff_exp));
  hp.n_expert = static_cast<int>(n_expert);
  hp.n_expert_used = static_cast<int>(n_used);
  return {};
}

}  // namespace

Result<Hparams> Hparams::from_gguf(const GgufFile& f) {
  Result<std::string> arch = f.get<std::string>("general.architecture");
  if (!arch) return Error(arch.error());
  Hparams hp;
  if (*arch == "qwen35") {
    hp.arch = Arch::DENSE;
  } else if (*arch == "qwen35moe") {
    hp.arch = Arch::MOE;
  } else {
    return Error(
        fmt::format("{}: architecture '{}' is not a Qwen3.5 model (expected qwen35 or qwen35moe)", f.name(), *arch));
  }
  const std::string& a = *arch;
  int64_t blocks = 0, nextn = 0;
  GL_TRY(read_int(f, a, kBlockCount, blocks));
  GL_TRY(read_int(f, a, kNextnLayers, nextn, false));
  GL_TRY(read_int(f, a, kEmbeddingLength, hp.n_embd));
  GL_TRY(read_int(f, a, kContextLength, hp.n_ctx_train, false));
  if (nextn < 0 || blocks - nextn <= 0)
    return Error(
        fmt::format("{}: block_count {} and nextn_predict_layers {} leave no trunk layers", f.name(), blocks, nextn));
  GL_TRY(check_positive(f, a, kEmbeddingLength, hp.n_embd));
  hp.n_layer = static_cast<int>(blocks - nextn);
  hp.n_nextn = static_cast<int>(nextn);
  GL_TRY(read_attention(f, a, hp));
  GL_TRY(read_gdn(f, a, hp));
  GL_TRY(read_ffn(f, a, hp));
  // The sections only matter for writing a file again; a file without them keeps the default.
  if (Result<std::vector<int32_t>> sec = f.get_array<int32_t>(a + "." + kRopeSections); sec && sec->size() <= 4) {
    hp.rope_sections = {0, 0, 0, 0};
    std::copy(sec->begin(), sec->end(), hp.rope_sections.begin());
  }
  const std::string embd = weight_name(WeightId::TOKEN_EMBD);
  if (const GgufTensorInfo* emb = f.find_tensor(embd)) hp.n_vocab = emb->ne[1];
  if (hp.n_vocab <= 0) return Error(fmt::format("{}: tensor '{}' is missing", f.name(), embd));
  hp.tied_embeddings = f.find_tensor(weight_name(WeightId::OUTPUT)) == nullptr;
  return hp;
}

void Hparams::write_gguf(GgufFile& meta, const std::string& name, uint32_t file_type, bool quantized) const {
  const std::string a = arch_name() + ".";
  auto u32 = [](int64_t v) { return GgufValue(static_cast<uint32_t>(v)); };
  meta.set("general.architecture", arch_name());
  meta.set("general.type", "model");
  meta.set("general.name", name);
  meta.set("general.size_label", size_label(*this, name));
  meta.set(a + kBlockCount, u32(n_block()));
  if (n_ctx_train > 0) meta.set(a + kContextLength, u32(n_ctx_train));
  meta.set(a + kEmbeddingLength, u32(n_embd));
  if (n_ff > 0) meta.set(a + kFeedForwardLength, u32(n_ff));
  meta.set(a + kHeadCount, u32(n_head));
  meta.set(a + kHeadCountKv, u32(n_head_kv));
  std::vector<int32_t> sections(rope_sections.begin(), rope_sections.end());
  meta.set(a + kRopeSections, GgufArray::of(sections));
  meta.set(a + kRopeFreqBase, rope_base);
  meta.set(a + kRmsEps, eps);
  if (is_moe()) {
    meta.set(a + kExpertCount, u32(n_expert));
    meta.set(a + kExpertUsedCount, u32(n_expert_used));
  }
  meta.set(a + kKeyLength, u32(head_dim));
  meta.set(a + kValueLength, u32(head_dim));
  meta.set("general.file_type", file_type);
  if (is_moe()) {
    meta.set(a + kExpertFfLength, u32(n_ff_exp));
    meta.set(a + kExpertSharedFfLength, u32(n_ff_shexp));
  }
  meta.set(a + kSsmConvKernel, u32(conv_kernel));
  meta.set(a + kSsmStateSize, u32(d_k));
  meta.set(a + kSsmGroupCount, u32(n_k_heads));
  meta.set(a + kSsmTimeStepRank, u32(n_v_heads));
  meta.set(a + kSsmInnerSize, u32(ssm_inner()));
  meta.set(a + kFullAttnInterval, u32(full_attn_interval));
  meta.set(a + kRopeDimCount, u32(rope_dims));
  if (n_nextn > 0) meta.set(a + kNextnLayers, u32(n_nextn));
  meta.set(a + kVocabSize, u32(n_vocab));
  if (quantized) meta.set("general.quantization_version", kQuantizationVersion);
}

namespace {

Status check(bool ok, std::string_view what) {
  if (ok) return {};
  return Error(fmt::format("invalid model dimensions: {}", what));
}

}  // namespace

Status Hparams::validate() const {
  GL_TRY(check(n_layer > 0 && n_nextn >= 0 && n_embd > 0 && n_vocab > 0, "layers, n_embd, n_vocab"));
  GL_TRY(check(n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0, "attention heads"));
  GL_TRY(check(head_dim > 0 && rope_dims > 0 && rope_dims <= head_dim, "head_dim / rope dims"));
  GL_TRY(check(full_attn_interval > 0, "full_attention_interval"));
  GL_TRY(check(conv_kernel > 0 && d_k > 0 && d_v > 0, "GDN head sizes"));
  GL_TRY(check(n_k_heads > 0 && n_v_heads > 0 && n_v_heads % n_k_heads == 0,
               "linear_num_value_heads must be a multiple of linear_num_key_heads"));
  if (is_moe()) {
    GL_TRY(check(n_expert > 0 && n_expert_used > 0 && n_expert_used <= n_expert, "experts"));
    return check(n_ff_exp > 0 && n_ff_shexp > 0, "expert / shared expert widths");
  }
  return check(n_expert == 0 && n_ff > 0, "a dense model needs intermediate_size and no experts");
}

}  // namespace gl::qwen35
