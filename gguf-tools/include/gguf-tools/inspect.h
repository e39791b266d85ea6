// inspect.h - human-readable and JSON summaries of a GGUF file's metadata and tensors.
//
//   gl::Result<gl::GgufFile> f = gl::GgufFile::open("model.gguf");
//   fmt::print("{}", gl::tools::inspect_text(*f, {.tensors = true}));
//   nlohmann::ordered_json j = gl::tools::inspect_json(*f, {});
//
// Arrays are summarised (element type, count, the first few values). Tensors are listed with
// ggml type, shape (ne, ggml order), byte size and data offset; any ggml type llama.cpp writes
// (q4_K, iq2_xs, ...) is shown, whether or not ggml-lite can compute with it. Works on files
// being planned too (a GgufFile with tensor infos but no data). Both outputs also summarise the
// mix: tensors, bytes and share of the tensor bytes per ggml type (type_usage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml-lite/gguf.h"

namespace gl::tools {

struct InspectOptions {
  bool tensors = true;
  size_t array_head = 8;    // array elements shown
  size_t max_string = 80;   // longer strings are cut, with the full length noted
  uint64_t file_bytes = 0;  // shown in the header when non-zero
};

// Tensor count and data bytes of one ggml type in a file.
struct TypeUsage {
  uint32_t ggml_type = 0;
  size_t count = 0;
  uint64_t bytes = 0;
};
// Every type present, most bytes first (then by type id).
std::vector<TypeUsage> type_usage(const GgufFile& f);

std::string inspect_text(const GgufFile& f, const InspectOptions& opt);
nlohmann::ordered_json inspect_json(const GgufFile& f, const InspectOptions& opt);

// "{4096, 248320}" for ne of a tensor info.
std::string shape_string(const GgufTensorInfo& t);
// One metadata value, as inspect_text shows it ("u32 5", "[string x 384] \"a\", \"b\", ...").
std::string value_summary(const GgufValue& v, const InspectOptions& opt);

}  // namespace gl::tools
