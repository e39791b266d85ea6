// config.json parsing: nested (VL text_config) and flat layouts, and clear errors.
#include "gguf-tools/hf_config.h"
#include "test_util.h"

namespace gl {
namespace {

// Shaped like a Qwen3.6-27B config, with 4 layers.
const char* kNested = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "model_type": "qwen3_5",
  "image_token_id": 248056,
  "tie_word_embeddings": false,
  "text_config": {
    "model_type": "qwen3_5_text",
    "hidden_size": 5120, "num_hidden_layers": 4, "vocab_size": 248320,
    "max_position_embeddings": 262144, "rms_norm_eps": 1e-06, "hidden_act": "silu",
    "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256,
    "attn_output_gate": true, "attention_bias": false,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "full_attention_interval": 4,
    "linear_num_key_heads": 16, "linear_num_value_heads": 48, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
    "mamba_ssm_dtype": "float32", "output_gate_type": "swish",
    "intermediate_size": 17408,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": true},
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false,
    "eos_token_id": 248044, "bos_token_id": null
  },
  "vision_config": {"depth": 27}
})";

// Shaped like Qwen3-Next-80B-A3B: flat, legacy rope fields, no layer_types, MoE.
const char* kFlat = R"({
  "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
  "hidden_size": 2048, "num_hidden_layers": 8, "vocab_size": 151936, "rms_norm_eps": 1e-6,
  "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
  "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
  "rope_theta": 10000000, "rope_scaling": null, "partial_rotary_factor": 0.25,
  "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
  "shared_expert_intermediate_size": 512, "norm_topk_prob": true, "decoder_sparse_step": 1,
  "mlp_only_layers": [], "intermediate_size": 5120, "tie_word_embeddings": false,
  "eos_token_id": [151643, 151645], "bos_token_id": 151643
})";

TEST(HfConfig, NestedTextConfig) {
  Result<HfConfig> c = parse_hf_config(kNested);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->nested);
  EXPECT_EQ(c->architecture, "Qwen3_5ForConditionalGeneration");
  EXPECT_EQ(c->model_type, "qwen3_5");
  EXPECT_EQ(c->text_model_type, "qwen3_5_text");
  EXPECT_EQ(c->hidden_size, 5120);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->layer_types, (std::vector<HfLayerType>{HfLayerType::LINEAR_ATTENTION, HfLayerType::LINEAR_ATTENTION,
                                                      HfLayerType::LINEAR_ATTENTION, HfLayerType::FULL_ATTENTION}));
  EXPECT_EQ(c->linear_num_value_heads, 48);
  EXPECT_EQ(c->rope.theta, 1e7);
  EXPECT_EQ(c->rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(c->rope.mrope_section, (std::vector<int64_t>{11, 11, 10}));
  EXPECT_TRUE(c->rope.mrope_interleaved);
  EXPECT_EQ(c->output_gate_type, "swish");
  EXPECT_EQ(c->intermediate_size, 17408);
  EXPECT_FALSE(c->is_moe());
  EXPECT_EQ(c->mtp_num_hidden_layers, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{248044}));
  EXPECT_FALSE(c->bos_token_id.has_value());
  EXPECT_FALSE(c->tie_word_embeddings);
}

TEST(HfConfig, FlatLegacyRopeAndDerivedLayers) {
  Result<HfConfig> c = parse_hf_config(kFlat, "next.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->nested);
  EXPECT_EQ(c->text_model_type, "qwen3_next");
  ASSERT_EQ(c->layer_types.size(), 8u);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(c->layer_types[i], i % 4 == 3 ? HfLayerType::FULL_ATTENTION : HfLayerType::LINEAR_ATTENTION) << i;
  EXPECT_EQ(c->rope.theta, 1e7);
  EXPECT_EQ(c->rope.partial_rotary_factor, 0.25);
  EXPECT_TRUE(c->rope.mrope_section.empty());
  EXPECT_TRUE(c->is_moe());
  EXPECT_EQ(c->num_experts, 512);
  EXPECT_EQ(c->num_experts_per_tok, 10);
  EXPECT_EQ(c->mtp_num_hidden_layers, 0);
  EXPECT_TRUE(c->attn_output_gate);  // absent in Qwen3-Next: defaults to true
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{151643, 151645}));
  EXPECT_EQ(c->bos_token_id, 151643);
}

TEST(HfConfig, LegacyMropeScaling) {
  std::string j = kFlat;
  const std::string_view from = R"("rope_scaling": null)";
  j.replace(j.find(from), from.size(), R"("rope_scaling": {"type": "mrope", "mrope_section": [11, 11, 10]})");
  Result<HfConfig> c = parse_hf_config(j);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->rope.type, "mrope");
  EXPECT_EQ(c->rope.mrope_section, (std::vector<int64_t>{11, 11, 10}));
}

TEST(HfConfig, TopLevelTieWins) {
  std::string j = kNested;
  const std::string_view from = R"("tie_word_embeddings": false)";
  j.replace(j.find(from), from.size(), R"("tie_word_embeddings": true)");
  Result<HfConfig> c = parse_hf_config(j);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->tie_word_embeddings);
}

std::string config_error(std::string json, std::string_view from, std::string_view to) {
  json.replace(json.find(from), from.size(), to);
  Result<HfConfig> c = parse_hf_config(json, "cfg.json");
  EXPECT_FALSE(c.ok());
  return c.ok() ? std::string() : c.error();
}

TEST(HfConfig, ErrorsNameFileAndKey) {
  EXPECT_EQ(config_error(kNested, R"("hidden_size": 5120,)", ""),
            "cfg.json: key 'text_config.hidden_size' is missing (expected an integer)");
  EXPECT_EQ(config_error(kNested, R"("hidden_size": 5120)", R"("hidden_size": "5120")"),
            "cfg.json: key 'text_config.hidden_size' is a JSON string, expected an integer");
  EXPECT_EQ(config_error(kFlat, R"("head_dim": 256)", R"("head_dim": 256.5)"),
            "cfg.json: key 'head_dim' is a JSON float, expected an integer");
  EXPECT_EQ(config_error(kNested, R"("rope_theta": 10000000, )", ""),
            "cfg.json: key 'text_config.rope_theta' is missing (expected a number)");
  EXPECT_EQ(config_error(kNested, R"("model_type": "qwen3_5",)", R"("model_type": "llama",)"),
            "cfg.json: key 'model_type' is 'llama'; supported: qwen3_5, qwen3_5_moe, qwen3_5_text, "
            "qwen3_5_moe_text, qwen3_next");
  EXPECT_EQ(config_error(kNested, R"("full_attention"])", R"("full_attention", "full_attention"])"),
            "cfg.json: key 'text_config.layer_types' has 5 entries, num_hidden_layers is 4");
  EXPECT_EQ(config_error(kNested, R"("full_attention"])", R"("mamba"])"),
            "cfg.json: key 'text_config.layer_types' has entry \"mamba\", expected \"full_attention\" or "
            "\"linear_attention\"");
  EXPECT_EQ(config_error(kNested, R"("mrope_section": [11, 11, 10])", R"("mrope_section": [11, "x"])"),
            "cfg.json: key 'text_config.rope_parameters.mrope_section' is a JSON string, expected a list of integers");
  EXPECT_EQ(config_error(kFlat, R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)"),
            "cfg.json: key 'num_key_value_heads' 3 does not divide num_attention_heads 16");
  EXPECT_EQ(config_error(kFlat, R"("num_hidden_layers": 8)", R"("num_hidden_layers": 1000000000000)"),
            "cfg.json: key 'num_hidden_layers' is 1000000000000, more than 65536");
  EXPECT_NE(config_error(kFlat, "{", "[").find("invalid JSON"), std::string::npos);
  EXPECT_NE(config_error(kFlat, R"("model_type": "qwen3_next",)", R"("model_type": "qwen3_next", "model_type": "x",)")
                .find("duplicate JSON key 'model_type'"),
            std::string::npos);
}

TEST(HfConfig, LoadsFromDirectory) {
  const std::string dir = test::tmp_path("model");
  std::filesystem::create_directories(dir);
  test::write_file(dir + "/config.json", std::string_view(kNested));
  Result<HfConfig> c = load_hf_config(dir);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->num_hidden_layers, 4);
  Result<HfConfig> missing = load_hf_config(dir + "/nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("nope.json: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace gl
