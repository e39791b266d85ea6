// dump.h - text, Graphviz DOT and JSON dumps of a graph.
//
//   gl::dump_text(graph, std::cout);
//   std::ofstream f("g.dot"); gl::dump_dot(graph, f);   // dot -Tsvg g.dot
//
// Each node shows: index, op, name, shape, dtype, backend, arena offset, and
// its sources by name. The dumped graph is the graph that runs.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "ggml-lite/graph.h"

namespace gl {

class Backend;

struct DumpOptions {
  std::span<Backend* const> backends;  // names for backend_id (may be empty)
  bool show_leafs = true;
  bool show_offsets = true;  // arena offsets (off for goldens that must not change with the planner)
};

void dump_text(const Graph& g, std::ostream& os, const DumpOptions& opt = {});
void dump_dot(const Graph& g, std::ostream& os, const DumpOptions& opt = {});
void dump_json(const Graph& g, std::ostream& os, const DumpOptions& opt = {});

}  // namespace gl
