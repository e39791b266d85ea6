// hf_config.cpp - reads the Qwen3.5 / Qwen3-Next text fields from config.json.
#include "gguf-tools/hf_config.h"

#include <sys/stat.h>

#include <array>
#include <limits>

#include <fmt/format.h>

#include "json_util.h"

namespace gl {
namespace {

using nlohmann::json;

constexpr size_t kMaxConfigBytes = 16u << 20;
constexpr int64_t kMaxLayers = 1 << 16;
constexpr std::array<std::string_view, 5> kModelTypes = {"qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text",
                                                         "qwen3_next"};

// Typed access to one JSON object; errors name the file and the key path. JSON null
// counts as absent (HF writes e.g. "rope_scaling": null).
class Fields {
 public:
  Fields(const json* obj, std::string prefix, const std::string& file)
      : obj_(obj), prefix_(std::move(prefix)), file_(file) {}

  const json* get(std::string_view key) const {
    if (!obj_) return nullptr;
    auto it = obj_->find(key);
    return it == obj_->end() || it->is_null() ? nullptr : &*it;
  }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  Error error(std::string_view key, std::string_view msg) const {
    return Error(fmt::format("{}: key '{}{}' {}", file_, prefix_, key, msg));
  }
  Error missing(std::string_view key, std::string_view want) const {
    return error(key, fmt::format("is missing (expected {})", want));
  }
  Error wrong(std::string_view key, const json& j, std::string_view want) const {
    return error(key, fmt::format("is a JSON {}, expected {}", json_kind(j), want));
  }

  Status integer(std::string_view key, int64_t& out, bool required) const {
    const json* j = get(key);
    if (!j) return required ? Status(missing(key, "an integer")) : Status();
    if (j->is_number_unsigned() && j->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return error(key, "does not fit int64");
    if (!j->is_number_integer()) return wrong(key, *j, "an integer");
    out = j->get<int64_t>();
    return {};
  }
  Status number(std::string_view key, double& out, bool required) const {
    const json* j = get(key);
    if (!j) return required ? Status(missing(key, "a number")) : Status();
    if (!j->is_number()) return wrong(key, *j, "a number");
    out = j->get<double>();
    return {};
  }
  Status boolean(std::string_view key, bool& out) const {
    const json* j = get(key);
    if (!j) return {};
    if (!j->is_boolean()) return wrong(key, *j, "a boolean");
    out = j->get<bool>();
    return {};
  }
  Status string(std::string_view key, std::string& out, bool required) const {
    const json* j = get(key);
    if (!j) return required ? Status(missing(key, "a string")) : Status();
    if (!j->is_string()) return wrong(key, *j, "a string");
    out = j->get<std::string>();
    return {};
  }
  // An integer list; with scalar_ok a single integer is read as a list of one.
  Status int_list(std::string_view key, std::vector<int64_t>& out, bool scalar_ok = false) const {
    const json* j = get(key);
    if (!j) return {};
    if (scalar_ok && j->is_number_integer()) {
      out = {j->get<int64_t>()};
      return {};
    }
    if (!j->is_array()) return wrong(key, *j, "a list of integers");
    out.clear();
    for (const json& e : *j) {
      if (!e.is_number_integer()) return wrong(key, e, "a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return {};
  }
  // A nested object (absent: an empty Fields); an error when present but not an object.
  Result<Fields> object(std::string_view key) const {
    const json* j = get(key);
    if (j && !j->is_object()) return wrong(key, *j, "an object");
    return Fields(j, fmt::format("{}{}.", prefix_, key), file_);
  }

 private:
  const json* obj_;
  std::string prefix_;
  const std::string& file_;
};

Status read_identity(const json& root, const Fields& top, const Fields& text, HfConfig& c) {
  if (const json* a = top.get("architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      return top.wrong("architectures", *a, "a non-empty list of strings");
    c.architecture = (*a)[0].get<std::string>();
  }
  GL_TRY(top.string("model_type", c.model_type, true));
  bool known = false;
  for (std::string_view t : kModelTypes) known = known || t == c.model_type;
  if (!known)
    return top.error("model_type", fmt::format("is '{}'; supported: qwen3_5, qwen3_5_moe, qwen3_5_text, "
                                               "qwen3_5_moe_text, qwen3_next",
                                               c.model_type));
  c.nested = root.contains("text_config") && !root["text_config"].is_null();
  c.text_model_type = c.model_type;
  return text.string("model_type", c.text_model_type, false);
}

Status read_dims(const Fields& t, HfConfig& c) {
  GL_TRY(t.integer("hidden_size", c.hidden_size, true));
  GL_TRY(t.integer("num_hidden_layers", c.num_hidden_layers, true));
  GL_TRY(t.integer("vocab_size", c.vocab_size, true));
  GL_TRY(t.integer("max_position_embeddings", c.max_position_embeddings, false));
  GL_TRY(t.number("rms_norm_eps", c.rms_norm_eps, true));
  GL_TRY(t.string("hidden_act", c.hidden_act, false));
  GL_TRY(t.integer("num_attention_heads", c.num_attention_heads, true));
  GL_TRY(t.integer("num_key_value_heads", c.num_key_value_heads, true));
  GL_TRY(t.integer("head_dim", c.head_dim, true));
  GL_TRY(t.boolean("attn_output_gate", c.attn_output_gate));
  GL_TRY(t.boolean("attention_bias", c.attention_bias));
  GL_TRY(t.integer("linear_num_key_heads", c.linear_num_key_heads, true));
  GL_TRY(t.integer("linear_num_value_heads", c.linear_num_value_heads, true));
  GL_TRY(t.integer("linear_key_head_dim", c.linear_key_head_dim, true));
  GL_TRY(t.integer("linear_value_head_dim", c.linear_value_head_dim, true));
  GL_TRY(t.integer("linear_conv_kernel_dim", c.linear_conv_kernel_dim, true));
  GL_TRY(t.string("mamba_ssm_dtype", c.mamba_ssm_dtype, false));
  GL_TRY(t.string("output_gate_type", c.output_gate_type, false));
  GL_TRY(t.integer("intermediate_size", c.intermediate_size, false));
  GL_TRY(t.integer("num_experts", c.num_experts, false));
  GL_TRY(t.integer("num_experts_per_tok", c.num_experts_per_tok, false));
  GL_TRY(t.integer("moe_intermediate_size", c.moe_intermediate_size, false));
  GL_TRY(t.integer("shared_expert_intermediate_size", c.shared_expert_intermediate_size, false));
  GL_TRY(t.boolean("norm_topk_prob", c.norm_topk_prob));
  GL_TRY(t.integer("decoder_sparse_step", c.decoder_sparse_step, false));
  GL_TRY(t.int_list("mlp_only_layers", c.mlp_only_layers));
  GL_TRY(t.boolean("mtp_use_dedicated_embeddings", c.mtp_use_dedicated_embeddings));
  if (t.has("mtp_num_hidden_layers")) return t.integer("mtp_num_hidden_layers", c.mtp_num_hidden_layers, true);
  return t.integer("num_nextn_predict_layers", c.mtp_num_hidden_layers, false);
}

Status read_layer_types(const Fields& t, HfConfig& c) {
  GL_TRY(t.integer("full_attention_interval", c.full_attention_interval, false));
  const json* lt = t.get("layer_types");
  if (!lt) {
    if (c.full_attention_interval <= 0)
      return t.error("full_attention_interval", fmt::format("is {}, expected > 0", c.full_attention_interval));
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      c.layer_types.push_back((i + 1) % c.full_attention_interval == 0 ? HfLayerType::FULL_ATTENTION
                                                                       : HfLayerType::LINEAR_ATTENTION);
    return {};
  }
  if (!lt->is_array()) return t.wrong("layer_types", *lt, "a list of strings");
  if (static_cast<int64_t>(lt->size()) != c.num_hidden_layers)
    return t.error("layer_types",
                   fmt::format("has {} entries, num_hidden_layers is {}", lt->size(), c.num_hidden_layers));
  for (const json& e : *lt) {
    if (e == "full_attention")
      c.layer_types.push_back(HfLayerType::FULL_ATTENTION);
    else if (e == "linear_attention")
      c.layer_types.push_back(HfLayerType::LINEAR_ATTENTION);
    else
      return t.error("layer_types", fmt::format("has entry {}, expected \"full_attention\" or "
                                                "\"linear_attention\"",
                                                e.dump()));
  }
  return {};
}

// rope_parameters (new) wins; rope_theta / rope_scaling / partial_rotary_factor are the fallback.
Status read_rope(const Fields& t, HfConfig& c) {
  Result<Fields> rp = t.object("rope_parameters");
  if (!rp) return Error(rp.error());
  Result<Fields> rs = t.object("rope_scaling");
  if (!rs) return Error(rs.error());
  HfRope& r = c.rope;
  GL_TRY(rs->string("type", r.type, false));
  GL_TRY(rs->string("rope_type", r.type, false));
  GL_TRY(rp->string("rope_type", r.type, false));
  if (rp->has("rope_theta"))
    GL_TRY(rp->number("rope_theta", r.theta, true));
  else
    GL_TRY(t.number("rope_theta", r.theta, true));
  if (rp->has("partial_rotary_factor"))
    GL_TRY(rp->number("partial_rotary_factor", r.partial_rotary_factor, true));
  else
    GL_TRY(t.number("partial_rotary_factor", r.partial_rotary_factor, true));
  GL_TRY(rs->int_list("mrope_section", r.mrope_section));
  GL_TRY(rp->int_list("mrope_section", r.mrope_section));
  GL_TRY(rs->boolean("mrope_interleaved", r.mrope_interleaved));
  GL_TRY(rp->boolean("mrope_interleaved", r.mrope_interleaved));
  if (!(r.theta > 0)) return t.error("rope_theta", fmt::format("is {}, expected > 0", r.theta));
  if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1))
    return t.error("partial_rotary_factor", fmt::format("is {}, expected in (0, 1]", r.partial_rotary_factor));
  return {};
}

// Keys a VL checkpoint may carry at either level: text_config first, except tie_word_embeddings.
Status read_shared(const Fields& top, const Fields& text, HfConfig& c) {
  if (top.has("tie_word_embeddings"))
    GL_TRY(top.boolean("tie_word_embeddings", c.tie_word_embeddings));
  else
    GL_TRY(text.boolean("tie_word_embeddings", c.tie_word_embeddings));
  const Fields& eos = text.has("eos_token_id") ? text : top;
  GL_TRY(eos.int_list("eos_token_id", c.eos_token_ids, true));
  const Fields& bos = text.has("bos_token_id") ? text : top;
  int64_t b = 0;
  if (bos.has("bos_token_id")) {
    GL_TRY(bos.integer("bos_token_id", b, true));
    c.bos_token_id = b;
  }
  return {};
}

Status check_positive(const Fields& t, const HfConfig& c) {
  const std::pair<std::string_view, int64_t> dims[] = {
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"vocab_size", c.vocab_size},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"linear_num_key_heads", c.linear_num_key_heads},
      {"linear_num_value_heads", c.linear_num_value_heads},
      {"linear_key_head_dim", c.linear_key_head_dim},
      {"linear_value_head_dim", c.linear_value_head_dim},
      {"linear_conv_kernel_dim", c.linear_conv_kernel_dim},
  };
  for (const auto& [key, v] : dims)
    if (v <= 0) return t.error(key, fmt::format("is {}, expected > 0", v));
  if (c.num_hidden_layers > kMaxLayers)
    return t.error("num_hidden_layers", fmt::format("is {}, more than {}", c.num_hidden_layers, kMaxLayers));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return t.error("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}",
                                                      c.num_key_value_heads, c.num_attention_heads));
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
    return t.error("linear_num_key_heads", fmt::format("{} does not divide linear_num_value_heads {}",
                                                       c.linear_num_key_heads, c.linear_num_value_heads));
  if (c.num_experts < 0 || c.num_experts_per_tok < 0 || c.num_experts_per_tok > c.num_experts)
    return t.error("num_experts_per_tok",
                   fmt::format("is {} with num_experts {}", c.num_experts_per_tok, c.num_experts));
  if (c.is_moe() && (c.num_experts_per_tok <= 0 || c.moe_intermediate_size <= 0))
    return t.error("moe_intermediate_size", "and num_experts_per_tok must be > 0 for a MoE model");
  if (c.mtp_num_hidden_layers < 0) return t.error("mtp_num_hidden_layers", "is negative");
  return {};
}

}  // namespace

Result<HfConfig> parse_hf_config(std::string_view json_text, const std::string& name) {
  Result<json> root = parse_json_strict(json_text, name, 16);
  if (!root) return Error(root.error());
  if (!root->is_object())
    return Error(fmt::format("{}: top level is a JSON {}, expected an object", name, json_kind(*root)));
  const Fields top(&*root, "", name);
  Result<Fields> nested = top.object("text_config");
  if (!nested) return Error(nested.error());
  const Fields& text = top.has("text_config") ? *nested : top;
  HfConfig c;
  // Passes in order; check_positive bounds num_hidden_layers before layer_types are built.
  Status s = read_identity(*root, top, text, c);
  if (s) s = read_dims(text, c);
  if (s) s = check_positive(text, c);
  if (s) s = read_layer_types(text, c);
  if (s) s = read_rope(text, c);
  if (s) s = read_shared(top, text, c);
  if (!s) return Error(s.error());
  return c;
}

Result<HfConfig> load_hf_config(const std::string& path) {
  struct stat st {};
  const bool dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  const std::string file = dir ? path + "/config.json" : path;
  Result<std::string> text = read_text_file(file, kMaxConfigBytes);
  if (!text) return Error(text.error());
  return parse_hf_config(*text, file);
}

}  // namespace gl
