// tools_test_util.h - helpers for the gguf-tools tests: temp paths, fixture access, reading
// tensors as floats, and writing small safetensors checkpoints for the error cases.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "gguf-tools/safetensors.h"

namespace gl::tools::test {

namespace fs = std::filesystem;

inline std::string fixture_dir(std::string_view name) {
  return (fs::path(GL_SOURCE_DIR) / "tests" / "fixtures" / name).string();
}

// A fresh directory under the build tree, unique per test.
inline std::string tmp_dir(std::string_view leaf = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name() + std::string(leaf);
  for (char& c : name)
    if (c == '/') c = '_';
  fs::path dir = fs::path(GL_BINARY_DIR) / "tools-test-tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The text part of a config.json (text_config when nested).
inline nlohmann::json text_config(const nlohmann::json& cfg) {
  return cfg.contains("text_config") ? cfg["text_config"] : cfg;
}

// Any F32/F16/BF16/Q8_0 GGUF tensor as floats.
inline std::vector<float> gguf_floats(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.nelements()));
  const std::optional<DType> dt = t.dtype();
  EXPECT_TRUE(dt.has_value()) << t.name;
  if (dt) to_float(*dt, t.data, out.data(), t.nelements());
  return out;
}

inline std::vector<float> st_floats(const SafetensorsTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.nelements()));
  Result<DType> dt = t.dtype();
  EXPECT_TRUE(dt.ok()) << t.name;
  if (dt) to_float(*dt, t.data.data(), out.data(), t.nelements());
  return out;
}

// One tensor for write_safetensors.
struct StTensor {
  std::string name;
  std::string dtype;  // "F32", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Writes a minimal valid .safetensors file (header sorted by name, data packed in that order).
inline void write_safetensors(const std::string& path, std::vector<StTensor> ts) {
  std::sort(ts.begin(), ts.end(), [](const StTensor& a, const StTensor& b) { return a.name < b.name; });
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const StTensor& t : ts) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string header = h.dump();
  while ((header.size() + 8) % 8 != 0) header.push_back(' ');
  const uint64_t n = header.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const StTensor& t : ts)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

// The tensors of a checkpoint as StTensor copies (for editing).
inline std::vector<StTensor> copy_tensors(const SafetensorsModel& m) {
  std::vector<StTensor> out;
  for (const SafetensorsTensor& t : m.tensors())
    out.push_back({t.name, t.dtype_name, t.shape, std::vector<uint8_t>(t.data.begin(), t.data.end())});
  return out;
}

// A copy of a fixture's config and tokenizer files (not its weights) into dir.
inline void copy_fixture_meta(const std::string& fixture, const std::string& dir) {
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(fixture) / f, fs::path(dir) / f, fs::copy_options::overwrite_existing);
}

}  // namespace gl::tools::test
