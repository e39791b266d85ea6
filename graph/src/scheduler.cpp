// scheduler.cpp - node placement in numbered passes, split cutting, plan cache.
//
// Passes (see scheduler.h): 1 weights, 2 support, 3 fallback; then leafs and
// views, which compute nothing, follow the memory they live in or feed.
#include "ggml-lite/scheduler.h"

#include <algorithm>
#include <unordered_map>

#include "ggml-lite/cpu.h"

namespace gl {
namespace {

constexpr int kUnplaced = -1;

int index_of(std::span<Backend* const> backends, const Backend* b) {
  auto it = std::find(backends.begin(), backends.end(), b);
  return it == backends.end() ? kUnplaced : static_cast<int>(it - backends.begin());
}

// The backend whose buffer holds t's memory when that memory is owned outside
// the graph (weights, caches). Arena-placed inputs are the graph's own.
int external_backend(const Tensor& t, std::span<Backend* const> backends) {
  const Tensor& r = root(t);
  if (r.op != Op::NONE || !r.buffer || r.arena_offset >= 0 || r.buffer->usage == BufferUsage::COMPUTE) {
    return kUnplaced;
  }
  return index_of(backends, &r.buffer->backend());
}

// Pure views compute nothing; set_rows/cpy also have a view_src but compute.
bool is_pure_view(const Tensor& t) { return is_view_op(t.op); }

class Placer {
 public:
  Placer(const Graph& g, std::span<Backend* const> backends) : g_(g), bs_(backends) {
    plan_.node_backend.assign(g.nodes().size(), kUnplaced);
    plan_.leaf_backend.assign(g.leafs().size(), kUnplaced);
    for (size_t i = 0; i < g.nodes().size(); ++i) node_index_[g.nodes()[i]] = static_cast<int>(i);
    for (size_t i = 0; i < g.leafs().size(); ++i) leaf_index_[g.leafs()[i]] = static_cast<int>(i);
  }

  SchedulePlan run() {
    pass_weights();
    pass_support();
    pass_fallback();
    pass_leafs();
    pass_views();
    plan_.fingerprint = g_.fingerprint();
    return std::move(plan_);
  }

 private:
  int n_priority() const { return bs_.size() > 1 ? static_cast<int>(bs_.size()) - 1 : static_cast<int>(bs_.size()); }
  int last() const { return static_cast<int>(bs_.size()) - 1; }

  // Where t's memory is (or will be) placed, as far as known so far.
  int memory_backend(const Tensor& t) const {
    const Tensor& r = root(t);
    if (auto it = node_index_.find(&r); it != node_index_.end()) return plan_.node_backend[it->second];
    if (int b = external_backend(r, bs_); b != kUnplaced) return b;
    auto it = leaf_index_.find(&r);
    return it == leaf_index_.end() ? kUnplaced : plan_.leaf_backend[it->second];
  }

  // 1. A node reading weights (or a cache) that live in a backend's buffer runs there.
  void pass_weights() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      const Tensor& n = *g_.nodes()[i];
      if (is_pure_view(n)) continue;
      for (int s = 0; s < n.n_srcs(); ++s) {
        int b = external_backend(*n.src[s], bs_);
        if (b != kUnplaced && bs_[b]->supports(n)) {
          plan_.node_backend[i] = b;
          break;
        }
      }
    }
  }

  // 2. First supporting backend with priority, preferring the first source's.
  void pass_support() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      const Tensor& n = *g_.nodes()[i];
      if (is_pure_view(n) || plan_.node_backend[i] != kUnplaced) continue;
      int pref = n.src[0] ? memory_backend(*n.src[0]) : kUnplaced;
      if (pref != kUnplaced && pref < n_priority() && bs_[pref]->supports(n)) {
        plan_.node_backend[i] = pref;
        continue;
      }
      for (int b = 0; b < n_priority(); ++b) {
        if (bs_[b]->supports(n)) {
          plan_.node_backend[i] = b;
          break;
        }
      }
    }
  }

  // 3. What no backend with priority supports runs on the last one.
  void pass_fallback() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      if (is_pure_view(*g_.nodes()[i]) || plan_.node_backend[i] != kUnplaced) continue;
      plan_.node_backend[i] = last();
      if (bs_.size() > 1) ++plan_.n_fallback;
    }
  }

  // Leafs live in their buffer's backend; data-less inputs go where they are first read.
  void pass_leafs() {
    for (size_t i = 0; i < g_.leafs().size(); ++i) {
      plan_.leaf_backend[i] = external_backend(*g_.leafs()[i], bs_);
    }
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      const Tensor& n = *g_.nodes()[i];
      if (is_pure_view(n)) continue;
      for (int s = 0; s < n.n_srcs(); ++s) {
        auto it = leaf_index_.find(&root(*n.src[s]));
        if (it != leaf_index_.end() && claimable(*g_.leafs()[it->second], plan_.leaf_backend[it->second])) {
          plan_.leaf_backend[it->second] = plan_.node_backend[i];
        }
      }
    }
    for (size_t i = 0; i < g_.leafs().size(); ++i) {
      if (claimable(*g_.leafs()[i], plan_.leaf_backend[i])) plan_.leaf_backend[i] = last();
    }
  }

  static bool claimable(const Tensor& leaf, int current) {
    return current == kUnplaced && (!leaf.data || leaf.arena_offset >= 0);
  }

  // Views go with the memory they view.
  void pass_views() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      const Tensor& n = *g_.nodes()[i];
      if (!is_pure_view(n)) continue;
      int b = memory_backend(n);
      plan_.node_backend[i] = b == kUnplaced ? last() : b;
    }
  }

  const Graph& g_;
  std::span<Backend* const> bs_;
  SchedulePlan plan_;
  std::unordered_map<const Tensor*, int> node_index_;
  std::unordered_map<const Tensor*, int> leaf_index_;
};

// Backend index of t's memory under a finished plan (-1: host memory outside any backend).
int placed_backend(const Tensor& t, const SchedulePlan& plan, const std::unordered_map<const Tensor*, int>& nodes,
                   const std::unordered_map<const Tensor*, int>& leafs) {
  const Tensor& r = root(t);
  if (auto it = nodes.find(&r); it != nodes.end()) return plan.node_backend[it->second];
  if (auto it = leafs.find(&r); it != leafs.end()) return plan.leaf_backend[it->second];
  return kUnplaced;
}

void list_inputs(Split& split, const SchedulePlan& plan, std::span<Backend* const> backends,
                 const std::unordered_map<const Tensor*, int>& nodes,
                 const std::unordered_map<const Tensor*, int>& leafs) {
  for (const Tensor* n : split.nodes) {
    if (is_pure_view(*n)) continue;
    for (int s = 0; s < n->n_srcs(); ++s) {
      Tensor* src = n->src[s];
      int b = placed_backend(*src, plan, nodes, leafs);
      bool here = b == split.backend_id || (b == kUnplaced && backends[split.backend_id]->is_host());
      auto& in = split.inputs_from_elsewhere;
      if (!here && std::find(in.begin(), in.end(), src) == in.end()) in.push_back(src);
    }
  }
}

// Cuts consecutive nodes of one backend into splits, pointing at g's tensors.
// Views join the split they sit in (they compute nothing, so never cut one).
void build_splits(SchedulePlan& plan, const Graph& g, std::span<Backend* const> backends) {
  plan.splits.clear();
  std::vector<Tensor*> pending;  // views before the first computing node
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Tensor* n = g.nodes()[i];
    int b = plan.node_backend[i];
    if (is_pure_view(*n)) {
      (plan.splits.empty() ? pending : plan.splits.back().nodes).push_back(n);
      continue;
    }
    if (plan.splits.empty() || plan.splits.back().backend_id != b) {
      Split s;
      s.backend_id = b;
      s.backend = backends[b];
      if (plan.splits.empty()) s.nodes = std::move(pending);
      plan.splits.push_back(std::move(s));
    }
    plan.splits.back().nodes.push_back(n);
  }
  if (plan.splits.empty() && !pending.empty()) {
    Split s;
    s.backend_id = plan.node_backend[0];
    s.backend = backends[s.backend_id];
    s.nodes = std::move(pending);
    plan.splits.push_back(std::move(s));
  }
  std::unordered_map<const Tensor*, int> nodes, leafs;
  for (size_t i = 0; i < g.nodes().size(); ++i) nodes[g.nodes()[i]] = static_cast<int>(i);
  for (size_t i = 0; i < g.leafs().size(); ++i) leafs[g.leafs()[i]] = static_cast<int>(i);
  for (Split& s : plan.splits) list_inputs(s, plan, backends, nodes, leafs);
}

void write_backend_ids(const SchedulePlan& plan, const Graph& g) {
  for (size_t i = 0; i < g.nodes().size(); ++i) g.nodes()[i]->backend_id = plan.node_backend[i];
  for (size_t i = 0; i < g.leafs().size(); ++i) g.leafs()[i]->backend_id = plan.leaf_backend[i];
}

// The fingerprint covers structure; where weights live also decides placement.
uint64_t cache_key(const Graph& g, std::span<Backend* const> backends) {
  uint64_t key = g.fingerprint();
  for (const Tensor* l : g.leafs()) {
    auto b = static_cast<uint64_t>(external_backend(*l, backends) + 2);
    key = (key ^ b) * 0x100000001b3ull;
  }
  return key;
}

}  // namespace

Scheduler::Scheduler(std::vector<Backend*> backends) : backends_(std::move(backends)) {
  GL_ASSERT(!backends_.empty(), "Scheduler: needs at least one backend");
  for (Backend* b : backends_) GL_ASSERT(b != nullptr, "Scheduler: null backend");
  // Placement falls back to the last backend; without a host one nothing could take the nodes a
  // device declines, so the CPU (which supports every node) joins last.
  if (std::none_of(backends_.begin(), backends_.end(), [](const Backend* b) { return b->is_host(); })) {
    implicit_cpu_ = cpu::make_backend();
    backends_.push_back(implicit_cpu_.get());
  }
}

SchedulePlan Scheduler::make_plan(const Graph& g) const {
  SchedulePlan plan = Placer(g, backends_).run();
  build_splits(plan, g, backends_);
  return plan;
}

const SchedulePlan& Scheduler::schedule(const Graph& g) {
  uint64_t key = cache_key(g, backends_);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    it = cache_.emplace(key, make_plan(g)).first;
    ++n_planned_;
  } else if (it->second.graph_id != g.id()) {
    // Same structure, other tensors: re-point the splits, keep the placement.
    build_splits(it->second, g, backends_);
  }
  it->second.graph_id = g.id();
  write_backend_ids(it->second, g);
  return it->second;
}

}  // namespace gl
