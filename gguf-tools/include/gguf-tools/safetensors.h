// safetensors.h - reader for Hugging Face safetensors checkpoints (one file or sharded).
// Part of gguf-tools, its only user (the converter); not installed with the library.
//
//   gl::Result<gl::SafetensorsModel> m = gl::SafetensorsModel::open("/models/Qwen3.6-27B");
//   if (!m) { fmt::print(stderr, "{}\n", m.error()); return 1; }
//   const gl::SafetensorsTensor* w = m->find("model.language_model.embed_tokens.weight");
//   gl::Result<gl::DType> dt = w->dtype();               // F32/F16/BF16, else an error
//   std::array<int64_t, 4> ne = w->ggml_ne().value();    // [vocab, H] -> {H, vocab, 1, 1}
//   std::span<const uint8_t> bytes = w->data;            // mmapped, row-major (PyTorch)
//
// open() takes a directory (uses model.safetensors.index.json, else model.safetensors),
// an index .json, or one .safetensors file. Files are mmapped and validated strictly:
// header length within the file, JSON well formed with no duplicate names, known dtypes,
// data_offsets inside the data region with begin <= end and size == numel * dtype size,
// and tensors covering the data region exactly (no overlaps, no holes, as the format requires).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"

namespace gl {

class MappedFile;

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;      // as in the header: "BF16", "F32", "F8_E4M3", ...
  std::vector<int64_t> shape;  // PyTorch order, outermost first; empty for a scalar
  std::span<const uint8_t> data;
  uint64_t data_begin = 0;  // data_offsets from the header (relative to the data region)
  uint64_t data_end = 0;
  std::string file;  // the file that holds it (for errors)

  int64_t nelements() const;
  // F32, F16 or BF16; else "<file>: tensor 'x' has dtype F8_E4M3 (supported: F32, F16, BF16)".
  Result<DType> dtype() const;
  // Shape reversed into ggml order and padded with 1s; an error above 4 dims.
  Result<std::array<int64_t, 4>> ggml_ne() const;
};

// One .safetensors file.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // Parses bytes in place (no copy); the buffer must outlive the tensors' data spans.
  static Result<SafetensorsFile> from_buffer(std::span<const uint8_t> bytes, std::string name = "<buffer>");

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // sorted by name
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // __metadata__

 private:
  friend struct SafetensorsAccess;
  std::string path_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const MappedFile> mapping_;
};

// A whole checkpoint: a single file, or the shards named by model.safetensors.index.json.
class SafetensorsModel {
 public:
  static Result<SafetensorsModel> open(const std::string& path);

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // sorted by name
  const SafetensorsTensor* find(std::string_view name) const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

 private:
  static Result<SafetensorsModel> open_index(const std::string& index_path);
  static Result<SafetensorsModel> from_shards(std::vector<SafetensorsFile> shards);

  std::vector<SafetensorsFile> shards_;
  std::vector<SafetensorsTensor> tensors_;
};

// Bits per element of a safetensors dtype name ("BF16" -> 16, "F4" -> 4); 0 if unknown.
int safetensors_dtype_bits(std::string_view dtype_name);

}  // namespace gl
