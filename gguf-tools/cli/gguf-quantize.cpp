// gguf-quantize - re-encodes the weights of a GGUF file (F32/F16/BF16 -> Q8_0 by default, or a
// llama.cpp mix such as q4_k_m).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "gguf-tools/progress.h"
#include "gguf-tools/quant_mix.h"
#include "gguf-tools/quantize.h"

int main(int argc, char** argv) {
  CLI::App app{"Quantize the weights of a GGUF file"};
  app.footer(R"(
Examples:
  gguf-quantize qwen35-9b-f16.gguf qwen35-9b-q8_0.gguf
  gguf-quantize in.gguf out.gguf --type bf16
  gguf-quantize qwen35-9b-f16.gguf qwen35-9b-q4_k_m.gguf --type Q4_K_M

q8_0 / f16 / bf16 / f32: 2-D+ F32/F16/BF16 weights (with ne[0] % 32 == 0 for q8_0) get that type
(token_embd and output included); norms, routers, ssm_conv1d, ssm_a / ssm_dt and 1-D tensors stay
as they are, as in llama.cpp.
Mixes (q4_0 ... q6_k, iq4_nl, iq4_xs, mxfp4_moe): each tensor gets the type llama-quantize would
give it for this architecture (e.g. q4_k_m: output q6_K, attn_v / attn_qkv / ffn_down of the
"more bits" layers q6_K, the rest q4_K; rows that are not whole blocks fall back to a
smaller-block type). No imatrix is used.
With a mix, already-quantized input tensors are dequantized to f32 first (ggml-lite's reference
dequantizers) and re-quantized, which adds the error of both formats; tensors already in their
target type are copied, and a type ggml-lite cannot dequantize is an error naming the tensor.
The plain targets copy already-quantized tensors unchanged.
Sets general.file_type (llama.cpp's LLAMA_FTYPE number) and general.quantization_version = 2.
The output is written to a temporary file and renamed when complete.)");
  gl::tools::QuantizeOptions o;
  std::string type = "q8_0";
  bool quiet = false;
  app.add_option("input", o.input, "Input GGUF")->required();
  app.add_option("output", o.output, "Output GGUF")->required();
  app.add_option("--type", type, "Target type (case-insensitive): " + gl::tools::mix_file_type_names())
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "No progress bar");
  CLI11_PARSE(app, argc, argv);

  o.file_type = type;
  o.progress = !quiet && gl::tools::stderr_is_tty();
  gl::Result<gl::tools::QuantizeReport> r = gl::tools::quantize_file(o);
  if (!r) {
    fmt::print(stderr, "gguf-quantize: error: {}\n", r.error());
    return 1;
  }
  fmt::print("{}: {:.2f} MB -> {}: {:.2f} MB ({:.1f}%), {} tensors converted, {} copied\n", o.input,
             static_cast<double>(r->bytes_in) / 1e6, o.output, static_cast<double>(r->bytes_out) / 1e6,
             100.0 * static_cast<double>(r->bytes_out) / static_cast<double>(r->bytes_in), r->n_converted, r->n_copied);
  return 0;
}
