// synth.h - synthetic qwen35 / qwen35moe GGUF files with random weights at real shapes, for
// benchmarks and loader tests without downloading a checkpoint.
//
//   gl::tools::SynthOptions o{.preset = "qwen35-9b", .type = gl::DType::Q8_0, .seed = 1, .output = "/tmp/9b.gguf"};
//   gl::Result<gl::tools::SynthReport> r = gl::tools::synth_model(o);
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
  ModelDims dims;
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
};

struct SynthReport {
  WriteStats stats;
  GgufFile layout;  // KVs and tensor infos (no data)
  uint64_t n_params = 0;
};

Result<SynthReport> synth_model(const SynthOptions& opt);

// The value synth_model writes at element i of the named tensor (before type conversion).
float synth_value(uint64_t seed, const TensorSpec& s, int64_t i);

}  // namespace gl::tools
