// qwen35_hparams.h - the one definition of a Qwen3.5 model's hyperparameters, its GGUF keys and
// its GGUF tensor names and shapes (llama.cpp's qwen35 / qwen35moe layout).
//
//   gl::Result<gl::qwen35::Hparams> hp = gl::qwen35::Hparams::from_gguf(file);   // the loader
//   gl::GgufFile meta;                                                            // gguf-convert, gguf-synth
//   hp->write_gguf(meta, "Qwen3.5-9B", /*file_type=*/1, /*quantized=*/false);
//   for (const gl::qwen35::WeightSpec& w : gl::qwen35::weight_layout(*hp))
//     fmt::print("{} {}\n", w.name, fmt::join(w.ne, "x"));
//
// The loader reads what gguf-convert and gguf-synth write because all three go through this
// header: keys are written and read in hparams.cpp, tensor names and shapes come from
// weight_layout(). gguf-tools fills an Hparams from config.json (model_spec.h hparams_from_hf).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"

namespace gl::qwen35 {

enum class Arch : uint8_t { DENSE, MOE };

inline constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION, general.quantization_version

struct Hparams {
  Arch arch = Arch::DENSE;
  int n_layer = 0;  // trunk layers (block_count minus nextn layers)
  int n_nextn = 0;  // MTP layers stored after the trunk (blk.{n_layer}...)
  int64_t n_embd = 0;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  // context_length; 0 = not written
  float eps = 1e-6f;
  bool tied_embeddings = false;  // no output.weight: the LM head is token_embd

  // gated full attention
  int n_head = 0;
  int n_head_kv = 0;
  int64_t head_dim = 0;  // key_length = value_length
  int rope_dims = 0;     // rope.dimension_count = head_dim * partial_rotary_factor
  float rope_base = 1e7f;
  std::array<int32_t, 4> rope_sections{11, 11, 10, 0};
  int full_attn_interval = 4;

  // Gated DeltaNet
  int64_t conv_kernel = 0;  // Kc
  int64_t d_k = 0;          // key head dim (ssm.state_size)
  int64_t n_k_heads = 0;    // Hk (ssm.group_count)
  int64_t n_v_heads = 0;    // Hv (ssm.time_step_rank)
  int64_t d_v = 0;          // value head dim (ssm.inner_size / Hv)

  // FFN: dense width (0 for MoE), or experts
  int64_t n_ff = 0;
  int n_expert = 0;
  int n_expert_used = 0;
  int64_t n_ff_exp = 0;
  int64_t n_ff_shexp = 0;

  bool is_moe() const { return arch == Arch::MOE; }
  std::string arch_name() const { return is_moe() ? "qwen35moe" : "qwen35"; }
  int n_block() const { return n_layer + n_nextn; }
  // llama.cpp's rule: trunk layer il is Gated DeltaNet iff (il + 1) % interval != 0; MTP layers
  // are always full attention.
  bool is_recurrent(int64_t il) const { return il < n_layer && (il + 1) % full_attn_interval != 0; }
  int64_t ssm_inner() const { return n_v_heads * d_v; }                   // Hv * Dv
  int64_t conv_dim() const { return 2 * n_k_heads * d_k + ssm_inner(); }  // q | k | v channels

  // Reads general.architecture and the {arch}.* keys; errors name the file and key.
  static Result<Hparams> from_gguf(const GgufFile& f);
  // Writes general.* (architecture, type, name, file_type, quantization_version when quantized)
  // and every {arch}.* key, in the order llama.cpp's converter writes them.
  void write_gguf(GgufFile& meta, const std::string& name, uint32_t file_type, bool quantized) const;
  // Sanity checks of values that did not come from a GGUF file (positive sizes, divisibility).
  Status validate() const;

  bool operator==(const Hparams&) const = default;
};

// Every weight tensor of the layout. Per-block ids repeat in each blk.{i}.
enum class WeightId : uint8_t {
  TOKEN_EMBD,
  OUTPUT_NORM,
  OUTPUT,
  ATTN_NORM,
  POST_ATTN_NORM,
  ATTN_Q,
  ATTN_K,
  ATTN_V,
  ATTN_OUTPUT,
  ATTN_Q_NORM,
  ATTN_K_NORM,
  SSM_QKV,
  SSM_GATE,
  SSM_CONV1D,
  SSM_DT,
  SSM_A,
  SSM_BETA,
  SSM_ALPHA,
  SSM_NORM,
  SSM_OUT,
  FFN_GATE,
  FFN_UP,
  FFN_DOWN,
  FFN_GATE_INP,
  FFN_GATE_EXPS,
  FFN_UP_EXPS,
  FFN_DOWN_EXPS,
  FFN_GATE_INP_SHEXP,
  FFN_GATE_SHEXP,
  FFN_UP_SHEXP,
  FFN_DOWN_SHEXP,
  NEXTN_EH_PROJ,
  NEXTN_ENORM,
  NEXTN_HNORM,
  NEXTN_SHARED_HEAD_NORM,
};

struct WeightSpec {
  WeightId id;
  int block = -1;           // blk index, -1 for token_embd / output_norm / output
  std::string name;         // GGUF name, e.g. "blk.3.attn_qkv.weight"
  std::vector<int64_t> ne;  // ggml order, ne[0] contiguous
  bool required = true;     // the loader accepts a file without it
};

// The GGUF name of one weight: "token_embd.weight", or "blk.{block}.attn_qkv.weight" for per-block ids.
std::string weight_name(WeightId id, int block = -1);

// Every tensor in writing order: token_embd, blk.0 .. blk.{n_block-1} (the nextn tensors after
// the first MTP block), output_norm, output (absent when tied).
std::vector<WeightSpec> weight_layout(const Hparams& hp);

// general.size_label as llama.cpp's converter derives it: the size parts of the model's name
// ("Qwen3.5-35B-A3B" -> "35B-A3B"), else from the tensors: "9.2B" for a dense model, "256x2.6B"
// (experts x the parameters one token reaches, shared ones included) for a MoE model.
std::string size_label(const Hparams& hp, std::string_view model_name = {});

}  // namespace gl::qwen35
