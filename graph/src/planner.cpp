// planner.cpp - liveness-based placement of a graph's tensors in one arena.
//
// Walks the nodes in order: a node gets a block (best fit in a free list,
// else growth at the end), then every source whose last reader was this node
// gives its block back. Views allocate nothing and keep their root alive.
#include "ggml-lite/planner.h"

#include <algorithm>
#include <unordered_set>

#include "ggml-lite/backend.h"

namespace gl {
namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Free blocks sorted by offset; adjacent blocks are merged and a block that
// reaches the end shrinks the end, so growth always happens at the end.
class FreeList {
 public:
  size_t alloc(size_t size) {
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].size >= size && (best == free_.size() || free_[i].size < free_[best].size)) best = i;
    }
    if (best == free_.size()) {
      size_t off = end_;
      end_ += size;
      peak_ = std::max(peak_, end_);
      return off;
    }
    size_t off = free_[best].off;
    free_[best].off += size;
    free_[best].size -= size;
    if (free_[best].size == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    return off;
  }

  void release(size_t off, size_t size) {
    GL_ASSERT(off + size <= end_, "planner: freeing a block past the end");
    auto it = std::lower_bound(free_.begin(), free_.end(), off, [](const Block& b, size_t o) { return b.off < o; });
    GL_ASSERT(it == free_.end() || off + size <= it->off, "planner: freed block overlaps a free block");
    GL_ASSERT(it == free_.begin() || std::prev(it)->off + std::prev(it)->size <= off,
              "planner: freed block overlaps a free block");
    it = free_.insert(it, Block{off, size});
    if (auto next = std::next(it); next != free_.end() && it->off + it->size == next->off) {
      it->size += next->size;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->off + prev->size == it->off) {
        prev->size += it->size;
        it = std::prev(free_.erase(it));
      }
    }
    if (it->off + it->size == end_) {
      end_ = it->off;
      free_.erase(it);
    }
  }

  size_t peak() const { return peak_; }

 private:
  struct Block {
    size_t off;
    size_t size;
  };
  std::vector<Block> free_;
  size_t end_ = 0;
  size_t peak_ = 0;
};

bool is_view(const Tensor& t) { return t.view_src != nullptr || (t.op != Op::NONE && is_view_op(t.op)); }

class Planner {
 public:
  Planner(const Graph& g, size_t alignment, int backend_id, const Backend* backend)
      : g_(g), alignment_(alignment), backend_id_(backend_id), backend_(backend) {}

  MemoryPlan run() {
    count_uses();
    find_shared_workspaces();
    for (Tensor* l : g_.leafs()) {
      if (is_planned(*l)) allocate(*l);
    }
    for (const Tensor* n : g_.nodes()) step(*n);
    plan_.arena_bytes = arena_.peak();
    fill_slots();
    return std::move(plan_);
  }

 private:
  bool is_planned(const Tensor& t) const {
    if (backend_id_ >= 0 && t.backend_id != backend_id_) return false;
    if (t.op == Op::NONE) return t.has_flag(TENSOR_INPUT) && (!t.data || t.arena_offset >= 0);
    return !is_view(t);
  }

  void count_uses() {
    for (const Tensor* n : g_.nodes()) {
      for (int i = 0; i < n->n_srcs(); ++i) {
        const Tensor* s = n->src[i];
        if (std::find(n->src.begin(), n->src.begin() + i, s) == n->src.begin() + i) ++children_[s];
      }
      if (n->view_src) ++views_[n->view_src];
    }
  }

  size_t block_size(const Tensor& t) const { return std::max(align_up(nbytes(t), alignment_), alignment_); }

  void allocate(const Tensor& t) {
    size_t size = block_size(t);
    size_t off = arena_.alloc(size);
    plan_.offsets[&t] = off;
    plan_.sizes[&t] = size;
    plan_.naive_bytes += size;
    owns_block_.insert(&t);
  }

  // The node reuses its first source's block: the op reads each element
  // before writing it, and nothing else will read the source afterwards.
  bool try_inplace(const Tensor& n) {
    const Tensor* s = n.src[0];
    if (!op_info(n.op).inplace_safe || !s || s->op == Op::NONE || is_view(*s)) return false;
    if (!owns_block_.count(s) || !is_planned(*s)) return false;
    if (s->has_flag(TENSOR_INPUT) || s->has_flag(TENSOR_OUTPUT)) return false;
    if (g_.n_consumers(s) != 1 || count(views_, s) != 0) return false;
    if (s->type != n.type || nbytes(*s) != nbytes(n) || !is_contiguous(*s) || !is_contiguous(n)) return false;
    plan_.offsets[&n] = plan_.offsets.at(s);
    plan_.sizes[&n] = plan_.sizes.at(s);
    plan_.naive_bytes += block_size(n);
    owns_block_.erase(s);
    owns_block_.insert(&n);
    ++plan_.n_inplace;
    return true;
  }

  void step(const Tensor& n) {
    if (is_planned(n) && !try_inplace(n)) allocate(n);
    reserve_workspace(n);
    for (int i = 0; i < n.n_srcs(); ++i) {
      const Tensor* s = n.src[i];
      if (std::find(n.src.begin(), n.src.begin() + i, s) != n.src.begin() + i) continue;
      --children_[s];
      maybe_free(*s);
    }
    maybe_free(n);  // a result nobody reads (not an output) dies at once
  }

  size_t workspace_bytes(const Tensor& n) const {
    if (!backend_ || n.op == Op::NONE || is_view_op(n.op)) return 0;
    if (backend_id_ >= 0 && n.backend_id != backend_id_) return 0;
    return backend_->workspace_size(n);
  }

  // Backend::workspace_share: per key its block's size and its last node, for keys of two or more.
  // A key with views gets none: a node writing through a view (CPY, SET_ROWS) could change it
  // between two of the nodes that share what was made of it.
  void find_shared_workspaces() {
    std::unordered_map<const Tensor*, int> members;
    for (const Tensor* n : g_.nodes()) {
      const size_t bytes = workspace_bytes(*n);
      const Tensor* key = bytes ? backend_->workspace_share(*n) : nullptr;
      if (!key || count(views_, key) > 0) continue;
      ++members[key];
      Shared& s = shared_[key];
      s.size = std::max(s.size, align_up(bytes, alignment_));
      s.last = n;
    }
    for (const auto& [key, count] : members)
      if (count < 2) shared_.erase(key);
  }

  // The node's scratch: a block taken while its output and sources are live, so it overlaps
  // neither, and given back at once, since the next node runs only after this one is done; a
  // shared block (find_shared_workspaces) is taken by the first of its nodes and given back after
  // the last, so the outputs of the nodes between are placed around it.
  void reserve_workspace(const Tensor& n) {
    const size_t bytes = workspace_bytes(n);
    if (bytes == 0) return;
    auto shared = shared_.end();
    if (const Tensor* key = backend_->workspace_share(n)) shared = shared_.find(key);
    const size_t size = shared != shared_.end() ? shared->second.size : align_up(bytes, alignment_);
    const bool first = shared == shared_.end() || shared->second.off < 0;
    const size_t off = first ? arena_.alloc(size) : static_cast<size_t>(shared->second.off);
    plan_.workspaces[&n] = off;
    plan_.workspace_sizes[&n] = size;
    if (first) plan_.naive_bytes += size;
    if (shared != shared_.end()) ++plan_.n_shared_workspaces;
    if (shared != shared_.end() && first) shared->second.off = static_cast<int64_t>(off);
    if (shared == shared_.end() || shared->second.last == &n) arena_.release(off, size);
  }

  // Frees t once no consumer and no view needs it any more.
  void maybe_free(const Tensor& t) {
    if (count(children_, &t) > 0 || count(views_, &t) > 0) return;
    if (t.has_flag(TENSOR_OUTPUT) || t.has_flag(TENSOR_INPUT)) return;
    if (t.view_src) {
      if (!released_views_.insert(&t).second) return;
      --views_[t.view_src];
      maybe_free(*t.view_src);
      return;
    }
    if (owns_block_.erase(&t)) arena_.release(plan_.offsets.at(&t), plan_.sizes.at(&t));
  }

  static int count(const std::unordered_map<const Tensor*, int>& m, const Tensor* t) {
    auto it = m.find(t);
    return it == m.end() ? 0 : it->second;
  }

  void fill_slots() {
    auto slot = [&](const Tensor* t) {
      auto it = plan_.offsets.find(t);
      if (it == plan_.offsets.end()) return MemoryPlan::Slot{};
      return MemoryPlan::Slot{static_cast<int64_t>(it->second), plan_.sizes.at(t)};
    };
    for (const Tensor* t : g_.leafs()) plan_.leaf_slots.push_back(slot(t));
    for (const Tensor* t : g_.nodes()) plan_.node_slots.push_back(slot(t));
    for (const Tensor* t : g_.nodes()) {
      auto it = plan_.workspaces.find(t);
      plan_.workspace_slots.push_back(it == plan_.workspaces.end() ? MemoryPlan::Slot{}
                                                                   : MemoryPlan::Slot{static_cast<int64_t>(it->second),
                                                                                      plan_.workspace_sizes.at(t)});
    }
  }

  const Graph& g_;
  size_t alignment_;
  int backend_id_;
  const Backend* backend_;  // asked for node scratch; nullptr: none
  MemoryPlan plan_;
  FreeList arena_;
  std::unordered_map<const Tensor*, int> children_;  // consumers that have not run yet
  std::unordered_map<const Tensor*, int> views_;     // views (by root) that are still needed
  std::unordered_set<const Tensor*> owns_block_;     // tensors holding a live block
  std::unordered_set<const Tensor*> released_views_;
  struct Shared {
    size_t size = 0;
    const Tensor* last = nullptr;  // the block goes back after this node's step
    int64_t off = -1;              // taken by the first node's step
  };
  std::unordered_map<const Tensor*, Shared> shared_;  // workspace_share key -> its block
};

void bind_one(Tensor& t, const MemoryPlan::Slot& s, Buffer& arena) {
  if (s.offset < 0) return;
  arena.bind(t, static_cast<size_t>(s.offset));
  t.arena_offset = s.offset;
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, size_t alignment, int backend_id, const Backend* backend) {
  GL_ASSERT(alignment > 0, "plan_memory: alignment must be positive");
  return Planner(g, alignment, backend_id, backend).run();
}

// By graph position (the slots), not through the maps: this runs before every step.
void bind_plan(const Graph& g, const MemoryPlan& plan, Buffer& arena) {
  GL_ASSERT(plan.arena_bytes <= arena.size(), "bind_plan: arena smaller than the plan");
  GL_ASSERT(plan.leaf_slots.size() == g.leafs().size() && plan.node_slots.size() == g.nodes().size() &&
                plan.workspace_slots.size() == g.nodes().size(),
            "bind_plan: graph does not match the plan");
  for (size_t i = 0; i < g.leafs().size(); ++i) bind_one(*g.leafs()[i], plan.leaf_slots[i], arena);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Tensor& t = *g.nodes()[i];
    bind_one(t, plan.node_slots[i], arena);
    if (const MemoryPlan::Slot& w = plan.workspace_slots[i]; w.offset >= 0)
      t.workspace = static_cast<char*>(arena.base()) + w.offset;
  }
  bind_views(g);
}

void bind_views(const Graph& g) {
  auto bind = [](Tensor* t) {
    const Tensor* r = t->view_src;
    if (!r || !r->data) return;
    t->data = static_cast<char*>(r->data) + t->view_offs;
    t->buffer = r->buffer;
    t->arena_offset = r->arena_offset >= 0 ? r->arena_offset + static_cast<int64_t>(t->view_offs) : -1;
  };
  for (Tensor* t : g.leafs()) bind(t);
  for (Tensor* t : g.nodes()) bind(t);
}

void rekey_plan(MemoryPlan& plan, const Graph& g) {
  GL_ASSERT(plan.leaf_slots.size() == g.leafs().size() && plan.node_slots.size() == g.nodes().size(),
            "rekey_plan: graph does not match the plan");
  plan.offsets.clear();
  plan.sizes.clear();
  plan.workspaces.clear();
  plan.workspace_sizes.clear();
  auto put = [&](const Tensor* t, const MemoryPlan::Slot& s) {
    if (s.offset < 0) return;
    plan.offsets[t] = static_cast<size_t>(s.offset);
    plan.sizes[t] = s.size;
  };
  for (size_t i = 0; i < plan.leaf_slots.size(); ++i) put(g.leafs()[i], plan.leaf_slots[i]);
  for (size_t i = 0; i < plan.node_slots.size(); ++i) put(g.nodes()[i], plan.node_slots[i]);
  for (size_t i = 0; i < plan.workspace_slots.size(); ++i) {
    const MemoryPlan::Slot& w = plan.workspace_slots[i];
    if (w.offset < 0) continue;
    plan.workspaces[g.nodes()[i]] = static_cast<size_t>(w.offset);
    plan.workspace_sizes[g.nodes()[i]] = w.size;
  }
}

}  // namespace gl
