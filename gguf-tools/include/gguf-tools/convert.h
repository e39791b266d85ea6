// convert.h - Hugging Face Qwen3.5 / Qwen3.5-MoE safetensors checkpoints -> llama.cpp GGUF
// (architectures qwen35 / qwen35moe), tensor by tensor, without holding the model in memory.
//
//   gl::tools::ConvertOptions o;
//   o.model_dir = "/models/Qwen3.5-9B";
//   o.output = "/models/qwen35-9b-q8_0.gguf";
//   o.outtype = gl::DType::Q8_0;
//   gl::Result<gl::tools::ConvertReport> r = gl::tools::convert_checkpoint(o);
//   if (!r) { fmt::print(stderr, "{}\n", r.error()); return 1; }
//
// Accepts model_type qwen3_5 / qwen3_5_text / qwen3_5_moe / qwen3_5_moe_text (architectures
// Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration and the Moe variants), the vision-language
// layout (model.language_model.*, model.visual.* ignored) and the flat one (model.*). Names,
// keys, shapes and transforms are those of llama.cpp's converter (model_spec.h); every
// non-vision tensor of the checkpoint must be used, or conversion fails naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"
#include "gguf-tools/stream_writer.h"

namespace gl::tools {

struct ConvertOptions {
  std::string model_dir;
  std::string output;
  // F32, F16, BF16 or Q8_0. nullopt: like llama.cpp's "auto", BF16 or F16 after the first 2-D
  // source tensor, F16 for F32 checkpoints.
  std::optional<DType> outtype;
  std::string name;           // general.name; default: the directory name
  bool include_mtp = true;    // false: drop mtp.* (no nextn_predict_layers, block_count = n_layer)
  std::string tokenizer_pre;  // overrides the detected tokenizer.ggml.pre
  bool dry_run = false;       // plan only: fill ConvertReport::layout, write nothing
  bool progress = false;      // progress bar on stderr
};

struct ConvertReport {
  std::string arch;
  DType outtype = DType::F16;
  WriteStats stats;                   // zero for a dry run
  std::vector<std::string> warnings;  // e.g. an unknown pre-tokenizer regex
  GgufFile layout;                    // the file's KVs and tensor infos (no data)
};

Result<ConvertReport> convert_checkpoint(const ConvertOptions& opt);

}  // namespace gl::tools
