// quantize.h - re-encodes the weights of a GGUF file (F32/F16/BF16 -> Q8_0, between float
// types, or into a llama.cpp mix such as q4_k_m), streaming tensor by tensor from the mapped input.
//
//   gl::tools::QuantizeOptions o{.input = "m-f16.gguf", .output = "m-q8_0.gguf", .type = gl::DType::Q8_0};
//   gl::Result<gl::tools::QuantizeReport> r = gl::tools::quantize_file(o);
//   o.file_type = "q4_k_m";  // any quant_mix.h name; overrides type
//
// With file_type set to a mix (q4_0 ... q6_k, iq4_nl, iq4_xs, mxfp4_moe), every tensor gets the
// type llama-quantize would give it (quant_mix.h), encoded with the quants registry; an input
// tensor that is already quantized is dequantized with the registry's to_float first (an error
// naming the tensor when the registry cannot). general.file_type is the mix's llama_ftype.
// The plain targets (q8_0, f16, bf16, f32, by type or file_type) follow the rule below.
//
// A tensor is re-encoded when it is F32/F16/BF16, has 2+ dims (ignoring trailing 1s), is not one
// of the tensors llama.cpp keeps in F32 (norms, routers, ssm_conv1d, names not ending in
// ".weight"; model_spec.h keep_f32) and, for Q8_0, has ne[0] % 32 == 0. token_embd and output
// are quantized too, as llama-quantize does for Q8_0. Everything else, including already
// quantized tensors (q4_K, iq2_xs, ...), is copied byte for byte. general.file_type is set to the
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
  std::string file_type;     // a quant_mix.h file type name, case-insensitive ("Q4_K_M"); empty: type
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
