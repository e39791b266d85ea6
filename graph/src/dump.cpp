// dump.cpp - text, Graphviz DOT and JSON views of a graph.
#include "ggml-lite/dump.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ggml-lite/backend.h"

namespace gl {
namespace {

// Display names: the tensor's own, else "#<node index>" / "#L<leaf index>",
// so unnamed tensors read the same in every dump of the same graph.
class Names {
 public:
  explicit Names(const Graph& g) {
    for (size_t i = 0; i < g.leafs().size(); ++i) add(g.leafs()[i], fmt::format("#L{}", i));
    for (size_t i = 0; i < g.nodes().size(); ++i) add(g.nodes()[i], fmt::format("#{}", i));
  }
  std::string of(const Tensor* t) const {
    auto it = names_.find(t);
    return it == names_.end() ? std::string("?") : it->second;
  }

 private:
  void add(const Tensor* t, std::string placeholder) {
    names_.emplace(t, t->name.empty() ? std::move(placeholder) : t->name);
  }
  std::unordered_map<const Tensor*, std::string> names_;
};

std::vector<std::string> flag_names(uint32_t flags) {
  std::vector<std::string> names;
  if (flags & TENSOR_INPUT) names.emplace_back("input");
  if (flags & TENSOR_OUTPUT) names.emplace_back("output");
  if (flags & TENSOR_WEIGHT) names.emplace_back("weight");
  return names;
}

std::string flags_str(uint32_t flags) { return fmt::format("{}", fmt::join(flag_names(flags), "|")); }

std::string backend_str(const Tensor& t, const DumpOptions& opt) {
  if (t.backend_id < 0 || static_cast<size_t>(t.backend_id) >= opt.backends.size()) return "-";
  return std::string(opt.backends[t.backend_id]->name());
}

std::string offset_str(const Tensor& t) { return t.arena_offset < 0 ? "-" : std::to_string(t.arena_offset); }

std::string srcs_str(const Tensor& t, const Names& names) {
  std::string s;
  for (int i = 0; i < t.n_srcs(); ++i) {
    if (i) s += ", ";
    s += names.of(t.src[i]);
  }
  return s;
}

// Prints rows as left-aligned columns; trailing blanks are trimmed.
void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    os << line << '\n';
  }
}

}  // namespace

void dump_text(const Graph& g, std::ostream& os, const DumpOptions& opt) {
  Names names(g);
  os << fmt::format("graph: {} leafs, {} nodes, {} outputs\n", g.leafs().size(), g.nodes().size(), g.outputs().size());
  if (opt.show_leafs) {
    os << "leafs:\n";
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < g.leafs().size(); ++i) {
      const Tensor& t = *g.leafs()[i];
      std::string flags = flags_str(t.flags);
      rows.push_back({fmt::format("L{}", i), names.of(&t), shape_str(t), std::string(dtype_name(t.type)),
                      flags.empty() ? "-" : flags, backend_str(t, opt)});
      if (opt.show_offsets) rows.back().push_back(offset_str(t));
    }
    print_table(os, rows);
  }
  os << "nodes:\n";
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Tensor& t = *g.nodes()[i];
    rows.push_back({std::to_string(i), std::string(op_name(t.op)), names.of(&t), shape_str(t),
                    std::string(dtype_name(t.type)), backend_str(t, opt)});
    if (opt.show_offsets) rows.back().push_back(offset_str(t));
    std::string tail = "<- " + srcs_str(t, names);
    if (std::string flags = flags_str(t.flags); !flags.empty()) tail += "  [" + flags + "]";
    rows.back().push_back(tail);
  }
  print_table(os, rows);
}

namespace {

std::string dot_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string dot_label(const Tensor& t, const Names& names, const DumpOptions& opt) {
  std::string label;
  if (t.op != Op::NONE) label += std::string(op_name(t.op)) + "\n";
  label += names.of(&t) + "\n" + shape_str(t) + " " + std::string(dtype_name(t.type));
  if (std::string flags = flags_str(t.flags); !flags.empty()) label += "\n" + flags;
  std::string where = backend_str(t, opt);
  if (opt.show_offsets && t.arena_offset >= 0) where += " @" + offset_str(t);
  if (where != "-") label += "\n" + where;
  return dot_escape(label);
}

}  // namespace

void dump_dot(const Graph& g, std::ostream& os, const DumpOptions& opt) {
  Names names(g);
  std::unordered_map<const Tensor*, std::string> ids;
  for (size_t i = 0; i < g.leafs().size(); ++i) ids[g.leafs()[i]] = fmt::format("L{}", i);
  for (size_t i = 0; i < g.nodes().size(); ++i) ids[g.nodes()[i]] = fmt::format("N{}", i);

  os << "digraph ggml_lite {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  if (opt.show_leafs) {
    for (const Tensor* t : g.leafs()) {
      os << fmt::format("  {} [shape=box, label=\"{}\"];\n", ids[t], dot_label(*t, names, opt));
    }
  }
  for (const Tensor* t : g.nodes()) {
    std::string style = t->view_src ? ", style=dashed" : "";
    if (t->has_flag(TENSOR_OUTPUT)) style += ", peripheries=2";
    os << fmt::format("  {} [shape=ellipse, label=\"{}\"{}];\n", ids[t], dot_label(*t, names, opt), style);
  }
  for (const Tensor* t : g.nodes()) {
    for (int i = 0; i < t->n_srcs(); ++i) {
      const Tensor* s = t->src[i];
      auto it = ids.find(s);
      if (it == ids.end() || (s->op == Op::NONE && !opt.show_leafs)) continue;
      os << fmt::format("  {} -> {}", it->second, ids[t]);
      os << (t->n_srcs() > 1 ? fmt::format(" [label=\"{}\"];\n", i) : std::string(";\n"));
    }
  }
  os << "}\n";
}

namespace {

nlohmann::ordered_json json_tensor(const Tensor& t, size_t index, const Names& names, const DumpOptions& opt) {
  nlohmann::ordered_json j;
  j["index"] = index;
  j["op"] = std::string(op_name(t.op));
  j["name"] = names.of(&t);
  std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + n_dims(t));
  j["shape"] = shape;
  j["dtype"] = std::string(dtype_name(t.type));
  j["flags"] = flag_names(t.flags);
  std::string backend = backend_str(t, opt);
  j["backend"] = backend == "-" ? nlohmann::ordered_json() : nlohmann::ordered_json(backend);
  if (opt.show_offsets) {
    j["offset"] = t.arena_offset < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(t.arena_offset);
  }
  if (t.op != Op::NONE) {
    nlohmann::ordered_json srcs = nlohmann::ordered_json::array();
    for (int i = 0; i < t.n_srcs(); ++i) srcs.push_back(names.of(t.src[i]));
    j["srcs"] = std::move(srcs);
  }
  if (t.view_src) {
    j["view_of"] = names.of(t.view_src);
    j["view_offs"] = t.view_offs;
  }
  return j;
}

}  // namespace

void dump_json(const Graph& g, std::ostream& os, const DumpOptions& opt) {
  Names names(g);
  nlohmann::ordered_json j;
  j["n_leafs"] = g.leafs().size();
  j["n_nodes"] = g.nodes().size();
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const Tensor* t : g.outputs()) outputs.push_back(names.of(t));
  j["outputs"] = std::move(outputs);
  nlohmann::ordered_json leafs = nlohmann::ordered_json::array();
  if (opt.show_leafs) {
    for (size_t i = 0; i < g.leafs().size(); ++i) leafs.push_back(json_tensor(*g.leafs()[i], i, names, opt));
  }
  j["leafs"] = std::move(leafs);
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (size_t i = 0; i < g.nodes().size(); ++i) nodes.push_back(json_tensor(*g.nodes()[i], i, names, opt));
  j["nodes"] = std::move(nodes);
  os << j.dump(2) << '\n';
}

}  // namespace gl
