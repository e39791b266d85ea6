// json_util.cpp - nlohmann-json with duplicate-key and depth checks.
#include "json_util.h"

#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace gl {

Result<nlohmann::json> parse_json_strict(std::string_view text, const std::string& name, int max_depth) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string problem;
  auto check = [&](int depth, Event event, nlohmann::json& parsed) {
    if (!problem.empty()) return false;
    switch (event) {
      case Event::object_start: keys.emplace_back(); [[fallthrough]];
      case Event::array_start:
        if (depth >= max_depth) problem = fmt::format("JSON nested deeper than {} levels", max_depth);
        break;
      case Event::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Event::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          problem = fmt::format("duplicate JSON key '{}'", parsed.get<std::string>());
        break;
      case Event::array_end:
      case Event::value: break;
    }
    return problem.empty();
  };
  try {
    nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), check);
    if (!problem.empty()) return Error(fmt::format("{}: {}", name, problem));
    return j;
  } catch (const nlohmann::json::exception& e) {
    if (!problem.empty()) return Error(fmt::format("{}: {}", name, problem));
    return Error(fmt::format("{}: invalid JSON: {}", name, e.what()));
  }
}

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(fmt::format("{}: cannot open", path));
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) return Error(fmt::format("{}: larger than {} bytes", path, max_bytes));
  }
  if (in.bad()) return Error(fmt::format("{}: read error", path));
  return text;
}

}  // namespace gl
