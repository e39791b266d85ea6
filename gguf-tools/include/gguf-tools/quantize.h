// quantize.h - re-encodes the weights of a GGUF file (F32/F16/BF16 -> Q8_0, or between float
// types), streaming tensor by tensor from the mapped input.
//
//   gl::tools::QuantizeOptions o{.input = "m-f16.gguf", .output = "m-q8_0.gguf", .type = gl::DType::Q8_0};
//   gl::Result<gl::tools::QuantizeReport> r = gl::tools::quantize_file(o);
//
// A tensor is re-encoded when it is F32/F16/BF16, has 2+ dims (ignoring trailing 1s), is not one
// of the tensors llama.cpp keeps in F32 (norms, routers, ssm_conv1d, names not ending in
// ".weight"; model_spec.h keep_f32) and, for Q8_0, has ne[0] % 32 == 0. token_embd and output
// are quantized too, as llama-quantize does for Q8_0. Everything else, including types ggml-lite
// cannot compute with (q4_K, ...), is copied byte for byte. general.file_type is set to the
// llama_ftype of the target and general.quantization_version to 2 for a quantized target.
#pragma once

#include <cstdint>
#include <string>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"

namespace gl::tools {

struct QuantizeOptions {
  std::string input;
  std::string output;
  DType type = DType::Q8_0;  // Q8_0, F16, BF16 or F32
  bool progress = false;
};

struct QuantizeReport {
  uint64_t bytes_in = 0;  // file sizes
  uint64_t bytes_out = 0;
  size_t n_converted = 0;  // tensors re-encoded
  size_t n_copied = 0;     // tensors copied as they were
};

Result<QuantizeReport> quantize_file(const QuantizeOptions& opt);

}  // namespace gl::tools
