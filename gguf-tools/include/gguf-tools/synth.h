// synth.h - synthetic qwen35 / qwen35moe GGUF files with random weights at real shapes, for
// benchmarks and loader tests without downloading a checkpoint.
//
//   gl::tools::SynthOptions o{.preset = "qwen35-9b", .type = gl::DType::Q8_0, .seed = 1, .output = "/tmp/9b.gguf"};
//   gl::Result<gl::tools::SynthReport> r = gl::tools::synth_model(o);
//
//   // The same model in memory, no file (a 35B BF16 model is 70 GB, more than a disk may hold):
//   gl::Result<gl::tools::SynthModel> s = gl::tools::SynthModel::create({.preset = "tiny", .type = gl::DType::Q8_0});
//   const gl::GgufTensorInfo& t = s->layout().tensors()[0];   // KVs + tensor infos, no data
//   std::vector<uint8_t> bytes(t.nbytes);
//   GL_TRY(s->fill(t, bytes.data()));                          // the bytes gguf-synth writes for t
//
// Names, shapes, types and keys are exactly what gguf-convert writes for the same config
// (model_spec.h), MTP layer included, plus a minimal valid byte-level BPE tokenizer
// (tokenizer_meta.h synth_tokenizer). Values come from a counter-based RNG (splitmix64 of
// seed, tensor name and element index), so a file is reproducible, any chunk can be generated
// independently (in parallel), and memory stays at a few chunk buffers for any model size.
// Magnitudes keep a forward pass finite: linear weights uniform with std 1/sqrt(fan_in),
// embeddings std 0.02, norms 1 +- 0.1, ssm_a = -exp(U(0, 2.5)) < 0, dt bias small.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/stream_writer.h"

namespace gl::tools {

struct SynthPreset {
  std::string name;
  std::string description;
  Hparams dims;
};

// qwen35-0.8b, qwen35-9b, qwen35-35b-a3b, tiny (dense, 4 + 1 MTP layers), tiny-moe.
const std::vector<SynthPreset>& synth_presets();
const SynthPreset* find_preset(const std::string& name);

struct SynthOptions {
  std::string preset;
  DType type = DType::F16;  // file type: F32, F16, BF16 or Q8_0 (per-tensor rules as the converter)
  uint64_t seed = 0;
  std::string output;
  bool dry_run = false;  // fill SynthReport::layout, write nothing
  bool progress = false;
  // SynthModel only: a llama.cpp file type ("q4_k_m", quant_mix.h). Each tensor gets the type
  // llama-quantize gives it when quantizing the `type` model, and the rows of a quantized tensor
  // repeat a pool of its first rows (about pool_values values) quantized by the reference
  // quantizer: a 35B-A3B Q4_K_M is made in seconds instead of a quantization's minutes. For
  // measuring speed (kernels do not depend on the values); the weights are no quantization of the
  // `type` model.
  std::string mix;
  int64_t pool_values = int64_t{1} << 18;
};

struct SynthReport {
  WriteStats stats;
  GgufFile layout;  // KVs and tensor infos (no data)
  uint64_t n_params = 0;
};

Result<SynthReport> synth_model(const SynthOptions& opt);

// A synthetic model without a file: its layout, and any tensor's bytes on demand. The layout and
// bytes are exactly those synth_model writes for the same preset, type and seed.
class SynthModel {
 public:
  // Checks preset, type and mix; output, dry_run and progress are ignored.
  static Result<SynthModel> create(const SynthOptions& opt);

  const GgufFile& layout() const { return layout_; }  // KVs and tensor infos (no data)
  uint64_t n_params() const { return n_params_; }
  // Writes the data of tensor t (found by name; t.nbytes bytes, ggml layout, converted to its
  // output type as the file writer does, norms etc. kept F32) to dst. Rows in parallel (OpenMP).
  // Errors: an unknown name, or a type or shape other than the layout's.
  Status fill(const GgufTensorInfo& t, void* dst) const;

 private:
  SynthModel() = default;
  std::vector<OutTensor> out_tensors() const;                // the writer's producers
  Status apply_mix(const std::string& name, GgufFile meta);  // types_, keys and layout of a mix
  friend Result<SynthReport> synth_model(const SynthOptions& opt);

  std::string preset_;
  uint64_t seed_ = 0;
  std::vector<TensorSpec> specs_;
  std::vector<DType> types_;                       // per spec: output_type, or the mix's type
  int64_t pool_values_ = 0;                        // mix given: quantized tensors repeat a pool of rows
  std::unordered_map<std::string, size_t> index_;  // tensor name -> specs_ / layout_ index
  GgufFile layout_;
  uint64_t n_params_ = 0;
};

// The value synth_model writes at element i of the named tensor (before type conversion).
float synth_value(uint64_t seed, const TensorSpec& s, int64_t i);

}  // namespace gl::tools
