// model_spec.h - how a Hugging Face Qwen3.5 checkpoint maps onto llama.cpp's qwen35 / qwen35moe
// GGUF layout: hyperparameters from config.json, and for each GGUF tensor its output type and
// the Hugging Face tensor (and transform) it comes from.
//
//   gl::Result<gl::qwen35::Hparams> hp = gl::tools::hparams_from_hf(*hf_config);
//   gl::GgufFile meta;
//   gl::tools::write_model_keys(meta, *hp, "Qwen3.5-9B", gl::DType::F16);
//   for (const gl::tools::TensorSpec& s : gl::tools::tensor_specs(*hp))
//     fmt::print("{} {} <- {}\n", s.name, fmt::join(s.ne, "x"), s.hf);
//
// The hyperparameter struct, the GGUF keys and the tensor names and shapes are the loader's own
// (ggml-lite/models/qwen35_hparams.h); this file adds only the Hugging Face side. The converter
// (convert.h) and the synthesiser (synth.h) both build files from it, so a synthetic file has
// exactly the names, shapes, types and keys of a converted one. Transforms follow
// docs/reference/ggml-llamacpp.md section 10 and llama.cpp's conversion/qwen.py.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/models/qwen35_hparams.h"
#include "ggml-lite/status.h"
#include "gguf-tools/hf_config.h"

namespace gl::tools {

using qwen35::Hparams;

// Checks the model_type / architecture and maps the config. Errors name what is unsupported.
Result<Hparams> hparams_from_hf(const HfConfig& c);

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
};

struct TensorSpec {
  std::string name;         // GGUF name, e.g. "blk.3.attn_qkv.weight" (qwen35::weight_layout)
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
std::vector<TensorSpec> tensor_specs(const Hparams& hp);

// Gated DeltaNet value heads: Hugging Face stores them grouped by key head, llama.cpp tiled
// (see model_spec.cpp). Returns the grouped index of the value head at tiled position p; the
// converter gathers with it. Example Hk = 2, Hv = 4: tiled order [v0, v2, v1, v3].
int64_t grouped_head_for_tiled(int64_t p, int64_t n_k_heads, int64_t n_v_heads);

// The llama_ftype written as general.file_type for an output type.
uint32_t llama_ftype(DType type);
using qwen35::kQuantizationVersion;

// The output type of one tensor for a requested file type, following llama.cpp's converter:
// 1-D tensors, norms, names not ending in ".weight" (ssm_a, ssm_dt.bias), the MoE routers and
// ssm_conv1d stay F32; Q8_0 needs ne[0] % 32 == 0, else the tensor falls back to F16.
DType output_type(const TensorSpec& s, DType requested);
// The same rules by name, for files without a spec (gguf-quantize).
bool keep_f32(std::string_view name, int n_dims);

// Hparams::write_gguf with general.file_type and quantization_version taken from file_type.
void write_model_keys(GgufFile& meta, const Hparams& hp, const std::string& name, DType file_type);

}  // namespace gl::tools
