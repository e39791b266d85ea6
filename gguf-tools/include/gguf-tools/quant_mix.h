// quant_mix.h - the ggml type of every tensor of a model in a llama.cpp file type ("q4_k_m"),
// chosen as llama-quantize chooses it (no imatrix, no overrides) for qwen35 / qwen35moe.
//
//   const gl::tools::MixFileType* ft = gl::tools::mix_file_type_by_name("Q4_K_M");
//   gl::Result<gl::tools::MixModel> m = gl::tools::mix_model_from_gguf(file);
//   gl::Result<std::vector<uint32_t>> types = gl::tools::mix_tensor_types(*ft, *m, file.tensors());
//
// The rule, per tensor:
// - Only tensors with 2+ dims (ignoring trailing 1s) whose name ends in "weight" and is not a
//   norm, router (ffn_gate_inp), ssm_conv1d or another small special tensor are quantized; the
//   rest keep their type.
// - output.weight (and token_embd.weight when there is no output.weight) gets Q6_K, or Q8_0 when
//   its row is not a multiple of the file type's block, or in MXFP4_MOE.
// - *_M mixes bump "more bits" layers (the first and last eighth, and every third one between)
//   of attn_v / attn_qkv (counted over all such tensors in llama.cpp's tensor order) and ffn_down
//   (by layer); Q2_K / Q3_K mixes raise attn_v, attn_output and ffn_down; MXFP4_MOE gives the 3-D
//   expert tensors MXFP4 and the other weights Q8_0.
// - A type whose block does not divide the row length falls back (q4_K -> q5_0, q5_K -> q5_1,
//   q6_K -> q8_0, q2_K / q3_K -> q4_0, iq4_xs -> iq4_nl), and to F16 when that does not fit
//   either.
// Float file types (f32, f16, bf16) give every quantizable tensor that type.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"

namespace gl::tools {

struct MixFileType {
  std::string_view name;  // lower case, as gguf-quantize --type takes it: "q4_k_m"
  uint32_t llama_ftype;   // LLAMA_FTYPE_* number, written as general.file_type
  uint32_t default_type;  // ggml type of the weights the mix does not single out
};

// Every file type the policy knows, in llama_ftype order.
std::span<const MixFileType> mix_file_types();
// Case-insensitive; nullptr when unknown.
const MixFileType* mix_file_type_by_name(std::string_view name);
// "q4_0, q4_1, ..." for help texts and errors.
std::string mix_file_type_names();

// The hyperparameters the policy reads.
struct MixModel {
  std::string arch;      // general.architecture
  int64_t n_layer = 0;   // {arch}.block_count (MTP layers included)
  int64_t n_expert = 0;  // {arch}.expert_count, 0 for dense models
  int64_t n_gqa = 0;     // head_count / head_count_kv of layer 0; 0 when head_count_kv is 0
};
// Errors name the file and key.
Result<MixModel> mix_model_from_gguf(const GgufFile& f);

// The ggml type of each tensor (same order as tensors); a tensor that is not quantized keeps
// its own type. Errors name the tensor (no fallback type, layer index out of range).
Result<std::vector<uint32_t>> mix_tensor_types(const MixFileType& ft, const MixModel& m,
                                               std::span<const GgufTensorInfo> tensors);

}  // namespace gl::tools
