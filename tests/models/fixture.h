// fixture.h - converted reference fixtures for model tests.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/models/qwen35.h"
#include "ggml-lite/safetensors.h"

namespace gl::test {

struct ModelFixture {
  std::string name;         // "qwen35-dense-tiny"
  std::string gguf;         // converted F32 GGUF
  nlohmann::json meta;      // reference.json
  SafetensorsFile ref;      // reference.safetensors
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
  // Rows of a reference tensor [rows, cols] as floats.
  std::vector<float> tensor(const std::string& name) const;
};

// Converts tests/fixtures/<name> once per process (F32) and loads its reference outputs.
const ModelFixture& model_fixture(const std::string& name);

// max |a - b| / max |b|
double rel_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace gl::test
