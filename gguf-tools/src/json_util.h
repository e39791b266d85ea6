// json_util.h - strict JSON parsing for untrusted checkpoint files (header, index, config).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ggml-lite/status.h"

namespace gl {

// Parses text; rejects syntax errors (with the byte position), duplicate keys in any
// object, and nesting deeper than max_depth. Errors start with "<name>: ".
Result<nlohmann::json> parse_json_strict(std::string_view text, const std::string& name, int max_depth);

// Reads a whole small file (config.json, index.json) into a string; bounded by max_bytes.
Result<std::string> read_text_file(const std::string& path, size_t max_bytes);

// "object", "array", "string", "number", ... for error messages.
inline std::string json_kind(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "float";
  return j.type_name();
}

}  // namespace gl
