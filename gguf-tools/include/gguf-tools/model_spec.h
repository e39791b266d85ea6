// model_spec.h - the GGUF layout of llama.cpp's qwen35 / qwen35moe architectures: keys,
// tensor names, ggml shapes, output types, and the Hugging Face tensor each one comes from.
//
//   gl::Result<gl::tools::ModelDims> d = gl::tools::dims_from_hf(*hf_config);
//   gl::GgufFile meta;
//   gl::tools::write_model_keys(meta, *d, "Qwen3.5-9B", gl::DType::F16);
//   for (const gl::tools::TensorSpec& s : gl::tools::tensor_specs(*d))
//     fmt::print("{} {} <- {}\n", s.name, fmt::join(s.ne, "x"), s.hf);
//
// The converter (convert.h) and the synthesiser (synth.h) both build files from this one
// table, so a synthetic file has exactly the names, shapes, types and keys of a converted one.
// Names, keys and transforms follow docs/reference/ggml-llamacpp.md section 10 and
// llama.cpp's conversion/qwen.py (Qwen3_5TextModel / Qwen3_5MoeTextModel).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/hf_config.h"
#include "ggml-lite/status.h"

namespace gl::tools {

// Hyperparameters of a qwen35 / qwen35moe model, in llama.cpp's terms.
struct ModelDims {
  std::string arch;     // "qwen35" (dense) or "qwen35moe"
  int64_t n_layer = 0;  // trunk layers
  int64_t n_mtp = 0;    // MTP layers, stored as blk.{n_layer + k}
  int64_t n_embd = 0;
  int64_t n_vocab = 0;
  int64_t n_ctx = 0;  // context_length (max_position_embeddings); 0 = not written
  int64_t n_ff = 0;   // dense MLP width; 0 for MoE (feed_forward_length is then not written)
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // key_length = value_length
  int64_t n_rot = 0;     // rope.dimension_count = head_dim * partial_rotary_factor
  double rope_theta = 0;
  std::array<int32_t, 4> rope_sections{11, 11, 10, 0};
  double rms_eps = 1e-6;
  int64_t full_attn_interval = 4;
  // Gated DeltaNet: Kc, Dk, Hk, Hv, Dv.
  int64_t ssm_conv_kernel = 0;
  int64_t ssm_d_state = 0;
  int64_t ssm_n_group = 0;
  int64_t ssm_dt_rank = 0;
  int64_t ssm_head_v_dim = 0;
  // MoE (all 0 for dense).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  int64_t n_ff_shexp = 0;
  bool tied_embeddings = false;

  bool is_moe() const { return n_expert > 0; }
  int64_t n_block() const { return n_layer + n_mtp; }
  // llama.cpp's rule: trunk layer il is Gated DeltaNet iff (il + 1) % interval != 0; MTP
  // layers are always full attention.
  bool is_recurrent(int64_t il) const { return il < n_layer && (il + 1) % full_attn_interval != 0; }
  int64_t ssm_inner() const { return ssm_dt_rank * ssm_head_v_dim; }         // Hv * Dv
  int64_t ssm_key_dim() const { return ssm_n_group * ssm_d_state; }          // Hk * Dk
  int64_t conv_channels() const { return 2 * ssm_key_dim() + ssm_inner(); }  // q | k | v
};

// Checks the model_type / architecture and maps the config. Errors name what is unsupported.
Result<ModelDims> dims_from_hf(const HfConfig& c);
// Sanity checks shared by the converter and the synthesiser (positive sizes, divisibility).
Status validate_dims(const ModelDims& d);

// How the synthesiser initialises a tensor (and how its values are distributed in real models).
enum class Role : uint8_t {
  EMBEDDING,  // token_embd, output
  WEIGHT,     // a linear layer, fan-in ne[0]
  NORM,       // RMSNorm weight stored as 1 + w (values near 1)
  SSM_NORM,   // the GDN gated norm, a plain scale (near 1)
  SSM_A,      // -exp(A_log), negative
  SSM_DT,     // dt bias
  CONV1D,     // depthwise causal conv kernel
};

// The transform from the Hugging Face tensor to the GGUF one (llama.cpp conversion/qwen.py).
enum class Xform : uint8_t {
  COPY,          // same values; PyTorch [out, in] is ggml ne {in, out}, the bytes need no transpose
  ADD_ONE,       // zero-centred RMSNorm weight w -> 1 + w
  V_QKV_ROWS,    // in_proj_qkv: the V block of rows goes from grouped to tiled head order
  V_ROWS,        // in_proj_z: rows in heads of Dv, grouped -> tiled
  V_HEAD_ROWS,   // in_proj_b / in_proj_a: one row per value head, grouped -> tiled
  V_HEADS,       // dt_bias: one value per value head, grouped -> tiled
  V_HEADS_A,     // A_log: grouped -> tiled, then -exp(A_log)
  V_CONV,        // conv1d [C, 1, Kc] -> [C, Kc] (ne {Kc, C}); V channels grouped -> tiled
  V_COLS,        // out_proj: input columns in heads of Dv, grouped -> tiled
  EXPERTS_GATE,  // fused gate_up_proj [E, 2Fe, H] rows [0, Fe), or stacked experts.{e}.gate_proj
  EXPERTS_UP,    // rows [Fe, 2Fe) of gate_up_proj, or stacked experts.{e}.up_proj
  EXPERTS_DOWN,  // down_proj [E, H, Fe], or stacked experts.{e}.down_proj
  SQUEEZE,       // shared_expert_gate [1, H] -> {H}
};

struct TensorSpec {
  std::string name;         // GGUF name, e.g. "blk.3.attn_qkv.weight"
  std::vector<int64_t> ne;  // ggml order, ne[0] contiguous
  Role role;
  Xform xform;
  // Hugging Face source. Trunk tensors are relative to the text prefix ("model." or
  // "model.language_model."), e.g. "layers.3.linear_attn.in_proj_qkv.weight"; top-level ones
  // ("lm_head.weight", "mtp.fc.weight") have hf_top_level set. For EXPERTS_* it is the module
  // path "layers.3.mlp.experts" (the converter accepts the fused and the per-expert layout).
  std::string hf;
  bool hf_top_level = false;

  int64_t nelements() const;
};

// Every tensor of the file in writing order: token_embd, blk.0 .. blk.{n_block-1} (MTP last),
// output_norm, output (absent when tied).
std::vector<TensorSpec> tensor_specs(const ModelDims& d);

// Gated DeltaNet value heads: Hugging Face stores them grouped by key head, llama.cpp tiled
// (see model_spec.cpp). Returns the grouped index of the value head at tiled position p; the
// converter gathers with it. Example Hk = 2, Hv = 4: tiled order [v0, v2, v1, v3].
int64_t grouped_head_for_tiled(int64_t p, int64_t n_k_heads, int64_t n_v_heads);

// The llama_ftype written as general.file_type for an output type.
uint32_t llama_ftype(DType type);
inline constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION

// The output type of one tensor for a requested file type, following llama.cpp's converter:
// 1-D tensors, norms, names not ending in ".weight" (ssm_a, ssm_dt.bias), the MoE routers and
// ssm_conv1d stay F32; Q8_0 needs ne[0] % 32 == 0, else the tensor falls back to F16.
DType output_type(const TensorSpec& s, DType requested);
// The same rules by name, for files without a spec (gguf-quantize).
bool keep_f32(std::string_view name, int n_dims);

// Writes general.* (architecture, type, name, file_type, quantization_version when quantized)
// and every {arch}.* key of section 10, in the order llama.cpp's converter writes them.
void write_model_keys(GgufFile& meta, const ModelDims& d, const std::string& name, DType file_type);

}  // namespace gl::tools
