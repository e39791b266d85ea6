// gguf-inspect - prints a GGUF file's metadata and tensor table (text or JSON).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ggml-lite/gguf.h"
#include "gguf-tools/inspect.h"

int main(int argc, char** argv) {
  CLI::App app{"Show the metadata and tensors of a GGUF file"};
  app.footer(R"(
Examples:
  gguf-inspect model.gguf                 # metadata (arrays summarised) and the tensor table
  gguf-inspect model.gguf --no-tensors    # metadata only
  gguf-inspect model.gguf --json | jq '.metadata[] | select(.key == "general.file_type")'

Works on any llama.cpp GGUF, including tensor types ggml-lite cannot compute with (iq2_xs, iq3_s...).
A "types:" table (JSON: .types) gives each type's tensor count, bytes and share of the tensor
bytes, e.g. how much of a Q4_K_M file is q4_K, q6_K and f32.)");
  std::string path;
  bool json = false, no_tensors = false;
  gl::tools::InspectOptions opt;
  app.add_option("file", path, "GGUF file")->required();
  app.add_flag("--json", json, "JSON output");
  app.add_flag("--no-tensors", no_tensors, "Leave out the tensor table");
  app.add_option("--array-head", opt.array_head, "Array elements shown")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  gl::Result<gl::GgufFile> f = gl::GgufFile::open(path);
  if (!f) {
    fmt::print(stderr, "gguf-inspect: error: {}\n", f.error());
    return 1;
  }
  opt.tensors = !no_tensors;
  gl::Result<uint64_t> size = f->file_size();
  opt.file_bytes = size ? *size : 0;
  if (json) {
    fmt::print("{}\n",
               gl::tools::inspect_json(*f, opt).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  } else {
    fmt::print("{}", gl::tools::inspect_text(*f, opt));
  }
  return 0;
}
