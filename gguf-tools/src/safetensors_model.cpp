// safetensors_model.cpp - a checkpoint of one or more .safetensors shards.
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gguf-tools/safetensors.h"
#include "json_util.h"

namespace gl {
namespace {

constexpr size_t kMaxIndexBytes = 64u << 20;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Shard names come from an untrusted file: plain file names only, no paths.
bool safe_shard_name(std::string_view n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos;
}

struct IndexEntry {
  std::string tensor;
  std::string shard;
};

Result<std::vector<IndexEntry>> read_weight_map(const std::string& index_path) {
  Result<std::string> text = read_text_file(index_path, kMaxIndexBytes);
  if (!text) return Error(text.error());
  Result<nlohmann::json> root = parse_json_strict(*text, index_path, 8);
  if (!root) return Error(root.error());
  if (!root->is_object() || !root->contains("weight_map") || !(*root)["weight_map"].is_object())
    return Error(fmt::format("{}: missing 'weight_map' object", index_path));
  std::vector<IndexEntry> entries;
  for (const auto& [tensor, shard] : (*root)["weight_map"].items()) {
    if (!shard.is_string())
      return Error(
          fmt::format("{}: weight_map['{}'] is a JSON {}, expected a file name", index_path, tensor, json_kind(shard)));
    std::string name = shard.get<std::string>();
    if (!safe_shard_name(name))
      return Error(fmt::format("{}: weight_map['{}'] = '{}' is not a plain file name", index_path, tensor, name));
    entries.push_back({tensor, std::move(name)});
  }
  if (entries.empty()) return Error(fmt::format("{}: weight_map is empty", index_path));
  return entries;
}

}  // namespace

const SafetensorsTensor* SafetensorsModel::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

Result<SafetensorsModel> SafetensorsModel::open(const std::string& path) {
  if (is_dir(path)) {
    const std::string index = path + "/model.safetensors.index.json";
    if (is_file(index)) return open_index(index);
    const std::string single = path + "/model.safetensors";
    if (is_file(single)) return open(single);
    return Error(fmt::format("{}: no model.safetensors.index.json or model.safetensors", path));
  }
  if (ends_with(path, ".json")) return open_index(path);
  Result<SafetensorsFile> f = SafetensorsFile::open(path);
  if (!f) return Error(f.error());
  std::vector<SafetensorsFile> shards;
  shards.push_back(std::move(f).value());
  return from_shards(std::move(shards));
}

Result<SafetensorsModel> SafetensorsModel::open_index(const std::string& index_path) {
  Result<std::vector<IndexEntry>> entries = read_weight_map(index_path);
  if (!entries) return Error(entries.error());
  std::set<std::string> names;
  for (const IndexEntry& e : *entries) names.insert(e.shard);
  std::vector<SafetensorsFile> shards;
  for (const std::string& n : names) {
    Result<SafetensorsFile> f = SafetensorsFile::open(dir_of(index_path) + "/" + n);
    if (!f) return Error(fmt::format("{}: shard '{}': {}", index_path, n, f.error()));
    shards.push_back(std::move(f).value());
  }
  for (const IndexEntry& e : *entries) {
    const size_t i = static_cast<size_t>(std::distance(names.begin(), names.find(e.shard)));
    if (!shards[i].find(e.tensor))
      return Error(
          fmt::format("{}: tensor '{}' is listed in shard '{}' but missing from it", index_path, e.tensor, e.shard));
  }
  return from_shards(std::move(shards));
}

// Merges the shards' tensors; a name may appear in only one shard.
Result<SafetensorsModel> SafetensorsModel::from_shards(std::vector<SafetensorsFile> shards) {
  SafetensorsModel m;
  for (const SafetensorsFile& f : shards) m.tensors_.insert(m.tensors_.end(), f.tensors().begin(), f.tensors().end());
  std::stable_sort(m.tensors_.begin(), m.tensors_.end(),
                   [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.name < b.name; });
  for (size_t i = 1; i < m.tensors_.size(); ++i)
    if (m.tensors_[i].name == m.tensors_[i - 1].name)
      return Error(fmt::format("tensor '{}' appears in both {} and {}", m.tensors_[i].name, m.tensors_[i - 1].file,
                               m.tensors_[i].file));
  m.shards_ = std::move(shards);
  return m;
}

}  // namespace gl
