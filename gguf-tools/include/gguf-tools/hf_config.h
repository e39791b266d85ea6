// hf_config.h - the text-model fields of a Hugging Face config.json for Qwen3.5 / Qwen3.6 /
// Qwen3-Next (dense and MoE), see docs/reference/qwen35-mtp-spec.md section 1.
// Part of gguf-tools, its only user (the converter); not installed with the library.
//
//   gl::Result<gl::HfConfig> c = gl::load_hf_config("/models/Qwen3.6-27B");  // dir or config.json
//   if (!c) { fmt::print(stderr, "{}\n", c.error()); return 1; }
//   for (int64_t i = 0; i < c->num_hidden_layers; ++i)
//     if (c->layer_types[i] == gl::HfLayerType::FULL_ATTENTION) ...
//
// Vision-language checkpoints (model_type qwen3_5 / qwen3_5_moe) keep the text fields under
// "text_config"; text-only exports and qwen3_next keep them at the top level. Both are read.
// Rope settings are taken from "rope_parameters" when present, else from the legacy
// rope_theta / rope_scaling / partial_rotary_factor fields. A missing required field, or any
// field of the wrong JSON type, is an error naming the file and the key path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/status.h"

namespace gl {

enum class HfLayerType : uint8_t { LINEAR_ATTENTION, FULL_ATTENTION };

struct HfRope {
  std::string type = "default";        // rope_type ("default", "mrope", ...)
  double theta = 0;                    // rope_theta (required)
  double partial_rotary_factor = 1.0;  // fraction of head_dim that is rotated (required)
  std::vector<int64_t> mrope_section;  // e.g. {11, 11, 10}; empty when absent
  bool mrope_interleaved = false;
};

struct HfConfig {
  std::string architecture;     // architectures[0], e.g. "Qwen3_5ForConditionalGeneration"
  std::string model_type;       // top level: qwen3_5, qwen3_5_moe, qwen3_5_text, qwen3_next, ...
  std::string text_model_type;  // text_config.model_type, or model_type when flat
  bool nested = false;          // fields came from text_config

  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  std::string hidden_act = "silu";

  // Full attention (gated, GQA).
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // explicit; never hidden_size / heads
  bool attn_output_gate = true;
  bool attention_bias = false;
  HfRope rope;

  // Layer pattern: layer_types, or derived from full_attention_interval.
  int64_t full_attention_interval = 4;
  std::vector<HfLayerType> layer_types;  // size num_hidden_layers

  // Gated DeltaNet (linear attention).
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 0;
  std::string mamba_ssm_dtype = "float32";
  std::string output_gate_type = "silu";  // activation of the GDN gated norm ("swish" == "silu")

  // Dense MLP (0 when absent) and MoE (num_experts 0 for dense models).
  int64_t intermediate_size = 0;
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  bool tie_word_embeddings = false;
  int64_t mtp_num_hidden_layers = 0;  // mtp_num_hidden_layers or num_nextn_predict_layers
  bool mtp_use_dedicated_embeddings = false;

  std::vector<int64_t> eos_token_ids;  // eos_token_id: an int or a list
  std::optional<int64_t> bos_token_id;

  bool is_moe() const { return num_experts > 0; }
};

// path: a config.json, or a directory holding one.
Result<HfConfig> load_hf_config(const std::string& path);
// Parses config.json text; name is used in error messages.
Result<HfConfig> parse_hf_config(std::string_view json_text, const std::string& name = "config.json");

}  // namespace gl
