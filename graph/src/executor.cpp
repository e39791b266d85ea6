// executor.cpp - schedule, plan, allocate and run graphs, one arena per backend.
//
// Cross-backend reads go through staging copies (see executor.h). compute()
// derives a split's staged roots from the split with the same function that
// allocate() used to size the staging space, so both always agree.
#include "ggml-lite/executor.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include <fmt/format.h>

namespace gl {
namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

Tensor* root_ptr(Tensor* t) { return t->view_src ? t->view_src : t; }
size_t offset_in_root(const Tensor& t) { return t.view_src ? t.view_offs : 0; }

// The backend whose memory holds root r, or nullptr for plain host memory outside every
// backend. Arena tensors are judged by placement: their buffer may be an arena since replaced.
Backend* owner_of(const Tensor& r, std::span<Backend* const> bs) {
  const bool in_arena = r.op != Op::NONE || r.arena_offset >= 0 || !r.data;
  if (in_arena) return r.backend_id >= 0 ? bs[static_cast<size_t>(r.backend_id)] : nullptr;
  return r.buffer ? &r.buffer->backend() : nullptr;
}

// The backend holding t's memory now (nullptr: plain host memory).
Backend* holder_of(const Tensor& t) {
  if (t.buffer) return &t.buffer->backend();
  const Tensor& r = root(t);
  return r.buffer ? &r.buffer->backend() : nullptr;
}

bool is_host(const Backend* b) { return b == nullptr || b->is_host(); }
bool device_to_device(const Backend* from, const Backend& to) { return !is_host(from) && !to.is_host() && from != &to; }

// Host backends read each other's (and plain host) memory in place; anything else is copied.
bool needs_copy(const Backend* from, const Backend& to) { return from != &to && !(to.is_host() && is_host(from)); }

// A range of one root that a split reads or writes on another backend, and where its copy
// sits, as an offset from the start of the split backend's staging space.
struct StagedRoot {
  Tensor* root = nullptr;
  Backend* owner = nullptr;  // nullptr: plain host memory
  size_t lo = 0;             // bytes [lo, hi) of the root
  size_t hi = 0;
  size_t offset = 0;
  bool written = false;  // a CPY/SET_ROWS of the split writes into it: copy back after compute
};

void add_range(std::vector<StagedRoot>& roots, Tensor* r, Backend* owner, size_t lo, size_t hi) {
  auto it = std::find_if(roots.begin(), roots.end(), [&](const StagedRoot& s) { return s.root == r; });
  if (it == roots.end()) {
    roots.push_back({.root = r, .owner = owner, .lo = lo, .hi = hi});
    return;
  }
  it->lo = std::min(it->lo, lo);
  it->hi = std::max(it->hi, hi);
}

// The roots split s must stage, laid out from offset 0 in s's backend alignment; returns the
// bytes they take. Views of one root share one copy, so a write through one view is seen by
// reads through another within the split.
size_t stage_roots(const Split& s, std::span<Backend* const> bs, std::vector<StagedRoot>& roots) {
  roots.clear();
  for (Tensor* in : s.inputs_from_elsewhere) {
    Tensor* r = root_ptr(in);
    Backend* owner = owner_of(*r, bs);
    const size_t n = nbytes(*in);
    if (n == 0 || !needs_copy(owner, *s.backend)) continue;
    add_range(roots, r, owner, offset_in_root(*in), offset_in_root(*in) + n);
  }
  // CPY and SET_ROWS compute into a view of their destination: its whole range is written.
  for (Tensor* n : s.nodes) {
    if (is_view_op(n->op) || !n->view_src) continue;
    Backend* owner = owner_of(*n->view_src, bs);
    if (!needs_copy(owner, *s.backend)) continue;
    add_range(roots, n->view_src, owner, n->view_offs, n->view_offs + nbytes(*n));
    for (StagedRoot& sr : roots) sr.written |= sr.root == n->view_src;
  }
  size_t end = 0;
  for (StagedRoot& sr : roots) {
    sr.offset = end;
    end += align_up(sr.hi - sr.lo, s.backend->alignment());
  }
  return end;
}

// A byte range of a buffer as a tensor: Backend::set_tensor/get_tensor only read data.
Tensor window(Buffer& b, size_t off) {
  Tensor t;
  t.data = static_cast<char*>(b.base()) + off;
  t.buffer = &b;
  t.name = "staging";
  return t;
}

// Points a split's nodes at staged copies while it computes; restore() puts every pointer back.
class Redirection {
 public:
  Redirection(std::span<const StagedRoot> roots, Buffer& arena, size_t staging_base)
      : roots_(roots), arena_(arena), base_(staging_base) {}

  void apply(std::span<Tensor* const> nodes) {
    for (Tensor* n : nodes) {
      if (is_view_op(n->op)) continue;
      for (int i = 0; i < n->n_srcs(); ++i) {
        if (Tensor* c = clone_of(n->src[i])) {
          srcs_.push_back({n, i, n->src[i]});
          n->src[i] = c;
        }
      }
      if (const StagedRoot* sr = n->view_src ? find(n->view_src) : nullptr) {
        datas_.push_back({n, n->data, n->buffer});
        n->data = staged_ptr(*sr, n->view_offs);
        n->buffer = &arena_;
      }
    }
  }

  void restore() {
    for (auto it = srcs_.rbegin(); it != srcs_.rend(); ++it) it->node->src[it->i] = it->orig;
    for (auto it = datas_.rbegin(); it != datas_.rend(); ++it) {
      it->node->data = it->data;
      it->node->buffer = it->buffer;
    }
    srcs_.clear();
    datas_.clear();
  }

 private:
  const StagedRoot* find(const Tensor* r) const {
    for (const StagedRoot& sr : roots_)
      if (sr.root == r) return &sr;
    return nullptr;
  }

  // Where byte `off` of sr's root is in the staging copy.
  void* staged_ptr(const StagedRoot& sr, size_t off) const {
    GL_ASSERT(off >= sr.lo && off < sr.hi, "executor: tensor outside its staged range");
    return static_cast<char*>(arena_.base()) + base_ + sr.offset + (off - sr.lo);
  }

  // A leaf copy of t that lives in the staging space (nullptr: t's root is not staged).
  Tensor* clone_of(Tensor* t) {
    const StagedRoot* sr = find(root_ptr(t));
    if (!sr) return nullptr;
    for (auto& [orig, c] : clones_)
      if (orig == t) return &c;
    Tensor& c = clones_.emplace_back(t, *t).second;
    c.op = Op::NONE;
    c.params = NoParams{};
    c.src = {};
    c.view_src = nullptr;
    c.view_offs = 0;
    c.data = staged_ptr(*sr, offset_in_root(*t));
    c.buffer = &arena_;
    c.arena_offset = static_cast<int64_t>(base_ + sr->offset + (offset_in_root(*t) - sr->lo));
    c.name = fmt::format("{}#{}", arena_.backend().name(), t->name);
    return &c;
  }

  struct SrcSave {
    Tensor* node;
    int i;
    Tensor* orig;
  };
  struct DataSave {
    Tensor* node;
    void* data;
    Buffer* buffer;
  };
  std::span<const StagedRoot> roots_;
  Buffer& arena_;
  size_t base_;
  std::deque<std::pair<Tensor*, Tensor>> clones_;  // deque: addresses stay stable
  std::vector<SrcSave> srcs_;
  std::vector<DataSave> datas_;
};

// Ranges that a CPY/SET_ROWS of split s wrote go back to their owner, after s's work (marked by
// done, recorded on s's backend). Returns the number of copies.
Result<int> copy_back(Backend& b, Event& done, std::span<const StagedRoot> roots, Buffer& arena, size_t base) {
  int n_copies = 0;
  for (const StagedRoot& sr : roots) {
    if (!sr.written) continue;
    if (n_copies == 0) GL_TRY(b.record(done));
    Tensor src = window(arena, base + sr.offset);
    const size_t n = sr.hi - sr.lo;
    if (sr.owner) {
      GL_TRY(sr.owner->wait(done));
      GL_TRY(sr.owner->copy_from(&b, src, 0, *sr.root, sr.lo, n));
      if (device_to_device(&b, *sr.owner)) {
        // b's next split may overwrite its staging space: it waits for the owner's copy.
        std::unique_ptr<Event> copied = sr.owner->make_event();
        GL_TRY(sr.owner->record(*copied));
        GL_TRY(b.wait(*copied));
      }
    } else {
      // Plain host memory: read back on the host once s's work is done.
      GL_TRY(done.host_wait());
      b.get_tensor(src, static_cast<char*>(sr.root->data) + sr.lo, 0, n);
    }
    ++n_copies;
  }
  return n_copies;
}

// Whether g's planned tensors point into this arena (another graph may have
// grown, and so replaced, the arena since g was allocated).
bool bound_to(const Graph& g, const MemoryPlan& plan, Buffer& arena) {
  auto check = [&](std::span<Tensor* const> ts, const std::vector<MemoryPlan::Slot>& slots) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (slots[i].offset < 0) continue;
      // The buffer too: a new arena may be handed the freed one's address.
      if (ts[i]->buffer != &arena || ts[i]->data != static_cast<char*>(arena.base()) + slots[i].offset) return false;
    }
    return true;
  };
  return check(g.leafs(), plan.leaf_slots) && check(g.nodes(), plan.node_slots);
}

// The scheduler's plan already carries the graph's fingerprint; where leafs live changes
// which arena holds what, so it is part of the key.
uint64_t plan_key(const SchedulePlan& sp) {
  uint64_t key = sp.fingerprint;
  for (int b : sp.leaf_backend) key = (key ^ static_cast<uint64_t>(b + 2)) * 0x100000001b3ull;
  return key;
}

}  // namespace

Executor::Executor(std::vector<Backend*> backends) : sched_(std::move(backends)) {
  arenas_.resize(sched_.backends().size());
}

Executor::Plan Executor::make_plan(const Graph& g, const SchedulePlan& sp) const {
  std::span<Backend* const> bs = sched_.backends();
  Plan plan;
  plan.arenas.resize(bs.size());
  plan.graph_id = g.id();
  const bool several = bs.size() > 1;
  for (size_t b = 0; b < bs.size(); ++b) {
    plan.arenas[b].memory = plan_memory(g, bs[b]->alignment(), several ? static_cast<int>(b) : -1, bs[b]);
  }
  std::vector<StagedRoot> roots;
  for (const Split& s : sp.splits) {
    if (s.inputs_from_elsewhere.empty()) continue;
    size_t& staging = plan.arenas[static_cast<size_t>(s.backend_id)].staging_bytes;
    staging = std::max(staging, stage_roots(s, bs, roots));
  }
  return plan;
}

Status Executor::allocate(const Graph& g) {
  std::span<Backend* const> bs = sched_.backends();
  const SchedulePlan& sp = sched_.schedule(g);
  const uint64_t key = plan_key(sp);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    it = plans_.emplace(key, make_plan(g, sp)).first;
  } else if (it->second.graph_id != g.id()) {
    for (ArenaPlan& ap : it->second.arenas) rekey_plan(ap.memory, g);  // a rebuilt graph has other tensors
    it->second.graph_id = g.id();
  } else if (is_bound(g, it->second)) {
    // The step before left g where its plan puts it; only views of outside tensors may move.
    bind_views(g);
    last_plan_ = &it->second;
    return {};
  }
  bool bound_any = false;
  for (size_t b = 0; b < bs.size(); ++b) {
    const ArenaPlan& ap = it->second.arenas[b];
    const size_t need = ap.memory.arena_bytes + ap.staging_bytes;
    if (need == 0 && bs.size() > 1) continue;  // nothing of this graph lives there
    std::unique_ptr<Buffer>& arena = arenas_[b];
    if (!arena || arena->size() < need) {
      arena.reset();
      arena = bs[b]->alloc_buffer(std::max(need, bs[b]->alignment()), BufferUsage::COMPUTE);
      if (!arena) return Error(fmt::format("executor: {} could not allocate a {} byte arena", bs[b]->name(), need));
    }
    bind_plan(g, ap.memory, *arena);
    bound_any = true;
  }
  if (!bound_any) bind_views(g);
  last_plan_ = &it->second;
  return {};
}

bool Executor::is_bound(const Graph& g, const Plan& plan) {
  for (size_t b = 0; b < plan.arenas.size(); ++b) {
    const ArenaPlan& ap = plan.arenas[b];
    const size_t need = ap.memory.arena_bytes + ap.staging_bytes;
    if (need == 0 && plan.arenas.size() > 1) continue;
    Buffer* arena = arenas_[b].get();
    if (!arena || arena->size() < need || !bound_to(g, ap.memory, *arena)) return false;
  }
  return true;
}

Status Executor::compute(const Graph& g) {
  GL_TRY(compute_queued(g));
  for (Backend* b : sched_.backends()) GL_TRY(b->synchronize());
  return {};
}

Status Executor::compute_queued(const Graph& g) {
  const SchedulePlan& sp = sched_.schedule(g);
  auto it = plans_.find(plan_key(sp));
  if (it == plans_.end() || !is_bound(g, it->second)) {
    return Error("executor: graph is not allocated in the current arena; call allocate() first");
  }
  n_copies_ = 0;
  for (const Split& s : sp.splits) GL_TRY(run_split(s, it->second.arenas[static_cast<size_t>(s.backend_id)]));
  return {};
}

Event& Executor::event_of(Backend& b) {
  const auto& bs = sched_.backends();
  const auto i = static_cast<size_t>(std::find(bs.begin(), bs.end(), &b) - bs.begin());
  GL_ASSERT(i < bs.size(), "executor: event of a backend it does not drive");
  if (events_.size() < bs.size()) events_.resize(bs.size());
  if (!events_[i]) events_[i] = b.make_event();
  return *events_[i];
}

// to's work queued from now on starts after the work queued on `from` so far (nothing to wait
// for in plain host memory). Recorded once per producer and split: the event covers all of it.
Status Executor::order_after(Backend* from, Backend& to) {
  if (from == nullptr || from == &to) return {};
  Event& e = event_of(*from);
  GL_TRY(from->record(e));
  return to.wait(e);
}

// Copies in what the split reads from elsewhere, runs it on the copies, copies back what it
// wrote. Each side waits on the other's event, not on a host round trip: a device consumer
// queues the wait and the copy on its stream; a host consumer (the CPU) waits on the host.
// Between two devices the producer's later work also waits for the consumer's copies, as it
// may reuse the memory they read (copies from or to the host finish before copy_from returns).
Status Executor::run_split(const Split& s, const ArenaPlan& ap) {
  if (s.inputs_from_elsewhere.empty()) return s.backend->compute(s.nodes);
  std::vector<StagedRoot> roots;
  const size_t used = stage_roots(s, sched_.backends(), roots);
  if (roots.empty()) return s.backend->compute(s.nodes);

  Buffer& arena = *arenas_[static_cast<size_t>(s.backend_id)];
  const size_t base = ap.memory.arena_bytes;
  GL_ASSERT(base + used <= arena.size(), "executor: staged copies do not fit the arena");
  for (size_t i = 0; i < roots.size(); ++i) {
    const StagedRoot& sr = roots[i];
    const bool first_of_owner = std::none_of(roots.begin(), roots.begin() + static_cast<std::ptrdiff_t>(i),
                                             [&](const StagedRoot& o) { return o.owner == sr.owner; });
    if (first_of_owner) GL_TRY(order_after(sr.owner, *s.backend));
    Tensor dst = window(arena, base + sr.offset);
    GL_TRY(s.backend->copy_from(sr.owner, *sr.root, sr.lo, dst, 0, sr.hi - sr.lo));
    ++n_copies_;
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    const bool first_of_owner = std::none_of(roots.begin(), roots.begin() + static_cast<std::ptrdiff_t>(i),
                                             [&](const StagedRoot& o) { return o.owner == roots[i].owner; });
    if (first_of_owner && device_to_device(roots[i].owner, *s.backend)) GL_TRY(order_after(s.backend, *roots[i].owner));
  }
  Redirection redirect(roots, arena, base);
  redirect.apply(s.nodes);
  Status st = s.backend->compute(s.nodes);
  redirect.restore();
  if (!st.ok()) return st;
  if (std::none_of(roots.begin(), roots.end(), [](const StagedRoot& r) { return r.written; })) return {};
  Result<int> back = copy_back(*s.backend, event_of(*s.backend), roots, arena, base);
  if (!back) return Error(back.error());
  n_copies_ += *back;
  return {};
}

const MemoryPlan* Executor::last_plan(int backend_id) const {
  if (!last_plan_) return nullptr;
  return &last_plan_->arenas.at(static_cast<size_t>(backend_id)).memory;
}

void Executor::set_input(Tensor& t, const void* src) {
  GL_ASSERT(t.data != nullptr, "set_input: tensor has no memory (allocate() first)");
  if (Backend* b = holder_of(t)) {
    b->set_tensor(t, src, 0, nbytes(t));
  } else {
    std::memcpy(t.data, src, nbytes(t));
  }
}

void Executor::get_output(const Tensor& t, void* dst) {
  GL_ASSERT(t.data != nullptr, "get_output: tensor has no memory (allocate() first)");
  if (Backend* b = holder_of(t)) {
    b->get_tensor(t, dst, 0, nbytes(t));
  } else {
    std::memcpy(dst, t.data, nbytes(t));
  }
}

}  // namespace gl
