// gguf-quantize - re-encodes the weights of a GGUF file (F32/F16/BF16 -> Q8_0 by default).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "gguf-tools/progress.h"
#include "gguf-tools/quantize.h"

int main(int argc, char** argv) {
  CLI::App app{"Quantize the weights of a GGUF file"};
  app.footer(R"(
Examples:
  gguf-quantize qwen35-9b-f16.gguf qwen35-9b-q8_0.gguf
  gguf-quantize in.gguf out.gguf --type bf16

2-D+ F32/F16/BF16 weights with ne[0] % 32 == 0 become Q8_0 (token_embd and output included);
norms, routers, ssm_conv1d, ssm_a / ssm_dt and 1-D tensors stay as they are, as in llama.cpp.
Sets general.file_type and general.quantization_version = 2.)");
  gl::tools::QuantizeOptions o;
  std::string type = "q8_0";
  bool quiet = false;
  app.add_option("input", o.input, "Input GGUF")->required();
  app.add_option("output", o.output, "Output GGUF")->required();
  app.add_option("--type", type, "Target type: q8_0, f16, bf16 or f32")
      ->check(CLI::IsMember({"q8_0", "f16", "bf16", "f32"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "No progress bar");
  CLI11_PARSE(app, argc, argv);

  o.type = *gl::dtype_from_name(type);
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
