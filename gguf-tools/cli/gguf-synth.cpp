// gguf-synth - writes a qwen35 / qwen35moe GGUF with random weights at real shapes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "gguf-tools/inspect.h"
#include "gguf-tools/progress.h"
#include "gguf-tools/synth.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic Qwen3.5 GGUF (random weights, real shapes, converter-identical keys)"};
  app.footer(R"(
Examples:
  gguf-synth --preset qwen35-9b --type q8_0 --seed 1 -o /tmp/qwen35-9b-q8_0.gguf
  gguf-synth --preset qwen35-35b-a3b --type bf16 -o /data/35b.gguf     # ~70 GB, little memory
  gguf-synth --preset tiny --type f32 -o tiny.gguf
  gguf-synth --preset qwen35-9b --type q8_0 --dry-run                  # metadata + tensor plan only
  gguf-synth --list

Values are reproducible: the same preset, type and seed give the same file.)");
  gl::tools::SynthOptions o;
  std::string type = "f16";
  bool quiet = false, list = false;
  app.add_option("--preset", o.preset, "Model preset (see --list)");
  app.add_option("--type", type, "f32, f16, bf16 or q8_0")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "RNG seed")->capture_default_str();
  app.add_option("-o,--output", o.output, "Output .gguf file");
  app.add_flag("--dry-run", o.dry_run, "Print the metadata and tensor plan, write nothing");
  app.add_flag("--list", list, "List the presets");
  app.add_flag("-q,--quiet", quiet, "No progress bar");
  CLI11_PARSE(app, argc, argv);

  if (list) {
    for (const gl::tools::SynthPreset& p : gl::tools::synth_presets()) fmt::print("{:<16} {}\n", p.name, p.description);
    return 0;
  }
  if (o.preset.empty() || (!o.dry_run && o.output.empty())) {
    fmt::print(stderr, "gguf-synth: error: --preset and -o OUTPUT are required (or --dry-run / --list)\n");
    return 2;
  }
  o.type = *gl::dtype_from_name(type);
  o.progress = !quiet && gl::tools::stderr_is_tty();
  gl::Result<gl::tools::SynthReport> r = gl::tools::synth_model(o);
  if (!r) {
    fmt::print(stderr, "gguf-synth: error: {}\n", r.error());
    return 1;
  }
  if (o.dry_run) {
    fmt::print("{}", gl::tools::inspect_text(r->layout, {}));
    fmt::print("parameters: {}\n", r->n_params);
    return 0;
  }
  fmt::print("{}: {} {} seed {}, {} tensors, {} parameters, {:.1f} MB\n", o.output, o.preset, type, o.seed,
             r->stats.n_tensors, r->n_params, static_cast<double>(r->stats.file_bytes) / 1e6);
  return 0;
}
