// inspect.cpp - GGUF summaries for gguf-inspect (text and JSON).
#include "gguf-tools/inspect.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gl::tools {
namespace {

using json = nlohmann::ordered_json;

// Cuts s to at most n bytes on a UTF-8 character boundary.
std::string cut_utf8(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string quoted(const std::string& s, size_t max) {
  std::string out = "\"";
  for (char c : cut_utf8(s, max)) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (static_cast<uint8_t>(c) < 0x20)
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
    else
      out += c;
  }
  out += "\"";
  if (s.size() > max) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

template <class T>
std::string scalar_text(const T& x) {
  if constexpr (std::is_same_v<T, bool>)
    return x ? "true" : "false";
  else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
    return fmt::format("{}", int{x});
  else
    return fmt::format("{}", x);
}

template <GgufNumeric T>
std::vector<T> head_values(const GgufArray& a, size_t n) {
  std::vector<T> v = a.values<T>();
  v.resize(std::min(v.size(), n));
  return v;
}

// Calls f(x) with the first n elements of a non-string array, typed.
template <class F>
void for_head(const GgufArray& a, size_t n, F&& f) {
  auto each = [&]<class T>(std::type_identity<T>) {
    for (const T& x : head_values<T>(a, n)) f(x);
  };
  switch (a.type()) {
    case GgufType::UINT8: each(std::type_identity<uint8_t>{}); return;
    case GgufType::INT8: each(std::type_identity<int8_t>{}); return;
    case GgufType::UINT16: each(std::type_identity<uint16_t>{}); return;
    case GgufType::INT16: each(std::type_identity<int16_t>{}); return;
    case GgufType::UINT32: each(std::type_identity<uint32_t>{}); return;
    case GgufType::INT32: each(std::type_identity<int32_t>{}); return;
    case GgufType::FLOAT32: each(std::type_identity<float>{}); return;
    case GgufType::BOOL: each(std::type_identity<bool>{}); return;
    case GgufType::UINT64: each(std::type_identity<uint64_t>{}); return;
    case GgufType::INT64: each(std::type_identity<int64_t>{}); return;
    case GgufType::FLOAT64: each(std::type_identity<double>{}); return;
    case GgufType::STRING:
    case GgufType::ARRAY: return;
  }
}

std::string array_head_text(const GgufArray& a, size_t n) {
  std::vector<std::string> parts;
  for_head(a, n, [&](const auto& x) { parts.push_back(scalar_text(x)); });
  return fmt::format("{}", fmt::join(parts, ", "));
}

json array_head_json(const GgufArray& a, size_t n, size_t max_string) {
  json out = json::array();
  if (a.type() == GgufType::STRING) {
    for (size_t i = 0; i < std::min(n, a.size()); ++i) out.push_back(cut_utf8(a.strings()[i], max_string));
    return out;
  }
  for_head(a, n, [&](const auto& x) { out.push_back(x); });
  return out;
}

// A scalar value as JSON (strings and arrays are handled by the caller).
json scalar_json(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, GgufArray>)
          return nullptr;
        else
          return x;
      },
      v);
}

std::string human_bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1 << 20));
  if (n >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / (1 << 10));
  return fmt::format("{} B", n);
}

uint64_t data_bytes(const GgufFile& f) {
  uint64_t n = 0;
  for (const GgufTensorInfo& t : f.tensors()) n += t.nbytes;
  return n;
}

double percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string type_usage_text(const GgufFile& f) {
  const uint64_t total = data_bytes(f);
  std::string out = "types:\n";
  for (const TypeUsage& u : type_usage(f))
    out += fmt::format("  {:<8} {:>5} {:<7}  {:>10}  {:5.1f}%\n", ggml_type_name(u.ggml_type), u.count,
                       u.count == 1 ? "tensor" : "tensors", human_bytes(u.bytes), percent(u.bytes, total));
  return out;
}

}  // namespace

std::vector<TypeUsage> type_usage(const GgufFile& f) {
  std::map<uint32_t, TypeUsage> by_type;
  for (const GgufTensorInfo& t : f.tensors()) {
    TypeUsage& u = by_type[t.ggml_type];
    u.ggml_type = t.ggml_type;
    ++u.count;
    u.bytes += t.nbytes;
  }
  std::vector<TypeUsage> out;
  for (const auto& [type, u] : by_type) out.push_back(u);
  std::stable_sort(out.begin(), out.end(), [](const TypeUsage& a, const TypeUsage& b) { return a.bytes > b.bytes; });
  return out;
}

std::string shape_string(const GgufTensorInfo& t) {
  std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
  return fmt::format("{{{}}}", fmt::join(ne, ", "));
}

std::string value_summary(const GgufValue& v, const InspectOptions& opt) {
  if (const auto* s = std::get_if<std::string>(&v)) return fmt::format("string  {}", quoted(*s, opt.max_string));
  if (const auto* a = std::get_if<GgufArray>(&v)) {
    const std::string head = fmt::format("[{} x {}]", gguf_type_name(a->type()), a->size());
    if (a->type() != GgufType::STRING) {
      const std::string more = a->size() > opt.array_head ? ", ..." : "";
      return fmt::format("{}  {}{}", head, array_head_text(*a, opt.array_head), more);
    }
    std::vector<std::string> parts;
    for (size_t i = 0; i < std::min(opt.array_head, a->size()); ++i) parts.push_back(quoted(a->strings()[i], 40));
    if (a->size() > opt.array_head) parts.push_back("...");
    return fmt::format("{}  {}", head, fmt::join(parts, ", "));
  }
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, GgufArray>)
          return {};
        else
          return fmt::format("{:<7} {}", gguf_type_name(GgufTypeOf<T>::value), scalar_text(x));
      },
      v);
}

std::string inspect_text(const GgufFile& f, const InspectOptions& opt) {
  std::string out = fmt::format("GGUF v{}  {}", f.version(), f.name());
  if (opt.file_bytes) out += fmt::format("  {} ({} bytes)", human_bytes(opt.file_bytes), opt.file_bytes);
  // A planned (not yet written) file has no data offset of its own: show where the data would start.
  Result<uint64_t> meta = f.meta_size();
  const uint64_t data_offset = f.data_offset() ? f.data_offset() : meta ? *meta : 0;
  out += fmt::format("  alignment {}  data offset {}\n", f.alignment(), data_offset);
  out += fmt::format("metadata: {} keys\n", f.kvs().size());
  size_t w = 0;
  for (const GgufKV& kv : f.kvs()) w = std::max(w, kv.key.size());
  for (const GgufKV& kv : f.kvs()) out += fmt::format("  {:<{}}  {}\n", kv.key, w, value_summary(kv.value, opt));
  out += fmt::format("tensors: {} ({} of data)\n", f.tensors().size(), human_bytes(data_bytes(f)));
  out += type_usage_text(f);
  if (!opt.tensors) return out;
  size_t nw = 4;
  for (const GgufTensorInfo& t : f.tensors()) nw = std::max(nw, t.name.size());
  out +=
      fmt::format("  {:>5}  {:<{}}  {:<7} {:<22} {:>12} {:>12}\n", "#", "name", nw, "type", "shape", "bytes", "offset");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    out += fmt::format("  {:>5}  {:<{}}  {:<7} {:<22} {:>12} {:>12}\n", i, t.name, nw, ggml_type_name(t.ggml_type),
                       shape_string(t), t.nbytes, t.offset);
  }
  return out;
}

json inspect_json(const GgufFile& f, const InspectOptions& opt) {
  json j;
  j["file"] = f.name();
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["data_offset"] = f.data_offset();
  if (opt.file_bytes) j["file_bytes"] = opt.file_bytes;
  json meta = json::array();
  for (const GgufKV& kv : f.kvs()) {
    json e{{"key", kv.key}, {"type", gguf_type_name(gguf_type_of(kv.value))}};
    if (const auto* a = std::get_if<GgufArray>(&kv.value)) {
      e["element_type"] = gguf_type_name(a->type());
      e["count"] = a->size();
      e["head"] = array_head_json(*a, opt.array_head, opt.max_string);
    } else if (const auto* s = std::get_if<std::string>(&kv.value)) {
      e["value"] = cut_utf8(*s, opt.max_string);
      if (s->size() > opt.max_string) e["length"] = s->size();
    } else {
      e["value"] = scalar_json(kv.value);
    }
    meta.push_back(std::move(e));
  }
  j["metadata"] = std::move(meta);
  j["n_tensors"] = f.tensors().size();
  j["tensor_bytes"] = data_bytes(f);
  json types = json::array();
  for (const TypeUsage& u : type_usage(f))
    types.push_back({{"type", ggml_type_name(u.ggml_type)},
                     {"count", u.count},
                     {"bytes", u.bytes},
                     {"percent", percent(u.bytes, data_bytes(f))}});
  j["types"] = std::move(types);
  if (!opt.tensors) return j;
  json ts = json::array();
  for (const GgufTensorInfo& t : f.tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    ts.push_back({{"name", t.name},
                  {"type", ggml_type_name(t.ggml_type)},
                  {"ne", ne},
                  {"bytes", t.nbytes},
                  {"offset", t.offset}});
  }
  j["tensors"] = std::move(ts);
  return j;
}

}  // namespace gl::tools
