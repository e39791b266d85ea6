// graph.cpp - graph build (iterative DFS), verification and fingerprinting.
#include "ggml-lite/graph.h"

#include "ggml-lite/hash.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

namespace gl {
namespace {

// Children of t in the order the DFS visits them: sources, then the view root
// (a view's memory owner must be in the graph even when no source names it).
constexpr int kChildren = kMaxSrcs + 1;

const Tensor* child(const Tensor* t, int i) {
  if (i < kMaxSrcs) return t->src[i];
  return t->view_src;
}

std::string label(const Tensor& t) { return t.name.empty() ? std::string("<unnamed>") : t.name; }

// "node 'name' (op)" for error messages.
std::string describe(const Tensor& t) { return fmt::format("node '{}' ({})", label(t), op_name(t.op)); }

}  // namespace

Graph Graph::build(std::span<Tensor* const> outputs) {
  static std::atomic<uint64_t> next_id{1};
  Graph g;
  g.id_ = next_id++;
  std::unordered_set<const Tensor*> visited;
  struct Frame {
    Tensor* t;
    int next;
  };
  std::vector<Frame> stack;
  for (Tensor* out : outputs) {
    GL_ASSERT(out != nullptr, "Graph::build: null output");
    out->flags |= TENSOR_OUTPUT;
    if (std::find(g.outputs_.begin(), g.outputs_.end(), out) == g.outputs_.end()) g.outputs_.push_back(out);
    if (!visited.insert(out).second) continue;
    stack.push_back({out, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < kChildren) {
        const Tensor* c = child(f.t, f.next++);
        if (c && visited.insert(c).second) stack.push_back({const_cast<Tensor*>(c), 0});
        continue;
      }
      // Post-order: every child is already placed, so this order is topological.
      (f.t->op == Op::NONE ? g.leafs_ : g.nodes_).push_back(f.t);
      stack.pop_back();
    }
  }
  std::unordered_map<const Tensor*, int> counts;
  for (const Tensor* n : g.nodes_) {
    for (int i = 0; i < n->n_srcs(); ++i) {
      const Tensor* s = n->src[i];
      bool seen_before = std::find(n->src.begin(), n->src.begin() + i, s) != n->src.begin() + i;
      if (!seen_before) ++counts[s];  // a node reading s twice is one consumer
    }
  }
  g.consumers_.assign(counts.begin(), counts.end());
  std::sort(g.consumers_.begin(), g.consumers_.end());
  return g;
}

int Graph::n_consumers(const Tensor* t) const {
  auto it = std::lower_bound(consumers_.begin(), consumers_.end(), std::make_pair(t, 0),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  return (it != consumers_.end() && it->first == t) ? it->second : 0;
}

namespace {

// Positions in graph order: leafs first, then nodes (same numbering as fingerprint()).
std::unordered_map<const Tensor*, int> positions(const Graph& g) {
  std::unordered_map<const Tensor*, int> pos;
  int i = 0;
  for (const Tensor* t : g.leafs()) pos.emplace(t, i++);
  for (const Tensor* t : g.nodes()) pos.emplace(t, i++);
  return pos;
}

Status check_arity(const Tensor& n) {
  const OpInfo& info = op_info(n.op);
  int count = n.n_srcs();
  for (int i = count; i < kMaxSrcs; ++i) {
    if (n.src[i]) return Error(fmt::format("{}: source {} is set after a null source {}", describe(n), i, count));
  }
  if (count < info.min_srcs || count > info.max_srcs) {
    return Error(fmt::format("{}: has {} sources, expected {}..{}", describe(n), count, info.min_srcs, info.max_srcs));
  }
  return {};
}

Status check_view(const Tensor& t) {
  if (!t.view_src) {
    if (t.op != Op::NONE && is_view_op(t.op))
      return Error(fmt::format("{}: view op without a view source", describe(t)));
    return {};
  }
  const Tensor& r = *t.view_src;
  if (r.view_src) return Error(fmt::format("{}: view source '{}' is itself a view", describe(t), label(r)));
  size_t end = t.view_offs + nbytes(t);
  if (end > nbytes(r)) {
    return Error(fmt::format("{}: view spans bytes [{}, {}) outside its root '{}' of {} bytes", describe(t),
                             t.view_offs, end, label(r), nbytes(r)));
  }
  return {};
}

}  // namespace

Status Graph::verify() const {
  for (const Tensor* l : leafs_) {
    if (!l->data && !l->has_flag(TENSOR_INPUT)) {
      return Error(fmt::format("leaf '{}' has no data and is not an input", label(*l)));
    }
    GL_TRY(check_view(*l));
  }
  std::unordered_map<const Tensor*, int> pos = positions(*this);
  const int n_leafs = static_cast<int>(leafs_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Tensor& n = *nodes_[i];
    GL_TRY(check_arity(n));
    const int here = n_leafs + static_cast<int>(i);
    for (int s = 0; s < n.n_srcs(); ++s) {
      auto it = pos.find(n.src[s]);
      if (it == pos.end() || it->second >= here) {
        return Error(
            fmt::format("{}: source {} '{}' does not appear before the node", describe(n), s, label(*n.src[s])));
      }
    }
    if (n.view_src) {
      auto it = pos.find(n.view_src);
      if (it == pos.end() || it->second >= here) {
        return Error(
            fmt::format("{}: view root '{}' does not appear before the node", describe(n), label(*n.view_src)));
      }
    }
    GL_TRY(check_view(n));
  }
  return {};
}

namespace {

void hash_tensor(Hasher& h, const Tensor& t, const std::unordered_map<const Tensor*, int>& pos) {
  auto index_of = [&](const Tensor* s) {
    auto it = pos.find(s);
    return it == pos.end() ? int32_t{-1} : static_cast<int32_t>(it->second);
  };
  h.value(t.op);
  hash_params(h, t.params);
  h.value(t.type);
  for (int64_t n : t.ne) h.value(n);
  for (size_t b : t.nb) h.value(b);
  h.value(t.flags);
  h.value(t.view_offs);
  h.value(t.view_src ? index_of(t.view_src) : int32_t{-2});
  for (const Tensor* s : t.src) h.value(s ? index_of(s) : int32_t{-2});
  // Leafs with memory of their own (weights, caches) plan differently from
  // data-less inputs; arena-placed inputs count as data-less.
  if (t.op == Op::NONE) h.value(static_cast<uint8_t>(t.data && t.arena_offset < 0));
}

}  // namespace

uint64_t Graph::fingerprint() const {
  if (has_fingerprint_) return fingerprint_;
  std::unordered_map<const Tensor*, int> pos = positions(*this);
  Hasher h;
  h.value(static_cast<uint64_t>(leafs_.size()));
  h.value(static_cast<uint64_t>(nodes_.size()));
  for (const Tensor* t : leafs_) hash_tensor(h, *t, pos);
  for (const Tensor* t : nodes_) hash_tensor(h, *t, pos);
  for (const Tensor* t : outputs_) h.value(pos.at(t));
  fingerprint_ = h.get();
  has_fingerprint_ = true;
  return fingerprint_;
}

}  // namespace gl
