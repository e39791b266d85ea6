// gguf-convert - Hugging Face Qwen3.5 / Qwen3.5-MoE checkpoint -> llama.cpp-compatible GGUF.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "gguf-tools/convert.h"
#include "gguf-tools/inspect.h"
#include "gguf-tools/progress.h"

namespace {

constexpr const char* kExamples = R"(
Examples:
  gguf-convert /models/Qwen3.5-9B -o qwen35-9b-bf16.gguf --outtype bf16
  gguf-convert /models/Qwen3.5-35B-A3B -o qwen35moe-q8_0.gguf --outtype q8_0
  gguf-convert /models/Qwen3.5-0.8B -o small.gguf --no-mtp --name Qwen3.5-0.8B
  gguf-convert tests/fixtures/qwen35-dense-tiny -o /tmp/x.gguf --dry-run   # print the plan only

Writes architecture qwen35 (dense) or qwen35moe with llama.cpp's tensor names, keys and
transforms (RMSNorm +1, ssm_a = -exp(A_log), V heads grouped -> tiled, experts split, MTP as
blk.{n_layer}). The output appears atomically (written to OUT.tmp.XXXXXX, then renamed).)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Convert a Hugging Face Qwen3.5 (dense or MoE) safetensors checkpoint to GGUF"};
  app.footer(kExamples);
  gl::tools::ConvertOptions o;
  std::string outtype = "auto";
  bool quiet = false, no_mtp = false;
  app.add_option("model_dir", o.model_dir, "Checkpoint directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  app.add_option("-o,--output", o.output, "Output .gguf file");
  app.add_option("--outtype", outtype, "f32, f16, bf16, q8_0, or auto (bf16/f16 like the checkpoint)")
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16", "q8_0"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--name", o.name, "general.name (default: the directory name)");
  app.add_flag("--no-mtp", no_mtp, "Leave out the MTP (multi-token prediction) layer");
  app.add_option("--tokenizer-pre", o.tokenizer_pre, "Override tokenizer.ggml.pre (detected: qwen35 or qwen2)");
  app.add_flag("--dry-run", o.dry_run, "Print the planned metadata and tensors, write nothing");
  app.add_flag("-q,--quiet", quiet, "No progress bar");
  CLI11_PARSE(app, argc, argv);

  if (!o.dry_run && o.output.empty()) {
    fmt::print(stderr, "gguf-convert: error: -o OUTPUT is required (or use --dry-run)\n");
    return 2;
  }
  if (outtype != "auto") o.outtype = gl::dtype_from_name(outtype);
  o.include_mtp = !no_mtp;
  o.progress = !quiet && gl::tools::stderr_is_tty();
  gl::Result<gl::tools::ConvertReport> r = gl::tools::convert_checkpoint(o);
  if (!r) {
    fmt::print(stderr, "gguf-convert: error: {}\n", r.error());
    return 1;
  }
  for (const std::string& w : r->warnings) fmt::print(stderr, "gguf-convert: warning: {}\n", w);
  if (o.dry_run) {
    fmt::print("{}", gl::tools::inspect_text(r->layout, {}));
    return 0;
  }
  fmt::print("{}: {} ({}), {} tensors, {:.1f} MB\n", o.output, r->arch, gl::dtype_name(r->outtype), r->stats.n_tensors,
             static_cast<double>(r->stats.file_bytes) / 1e6);
  return 0;
}
