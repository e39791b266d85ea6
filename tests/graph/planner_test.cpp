// planner_test.cpp - memory plans: reuse, no overlap of live tensors, in-place rules, binding.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "fake_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/planner.h"

namespace gl {
namespace {

Tensor* input(Context& ctx, std::initializer_list<int64_t> ne, const char* name) {
  Tensor* t = ctx.new_tensor(DType::F32, ne, name);
  t->flags |= TENSOR_INPUT;
  return t;
}

// Liveness recomputed from the graph alone, independently of the planner:
// a tensor lives from the step that produces it to the last step that reads it
// directly or through any view; inputs, outputs and roots of output views live
// for the whole graph.
struct Lifetime {
  const Tensor* t;
  int start;
  int end;
  size_t off;
  size_t size;
};

constexpr int kForever = INT_MAX;

std::vector<Lifetime> lifetimes(const Graph& g, const MemoryPlan& plan) {
  std::unordered_map<const Tensor*, int> step;
  for (const Tensor* l : g.leafs()) step[l] = -1;
  for (size_t i = 0; i < g.nodes().size(); ++i) step[g.nodes()[i]] = static_cast<int>(i);
  std::unordered_map<const Tensor*, int> end;
  for (const auto& [t, off] : plan.offsets) {
    end[t] = (t->has_flag(TENSOR_INPUT) || t->has_flag(TENSOR_OUTPUT)) ? kForever : step.at(t);
  }
  for (size_t j = 0; j < g.nodes().size(); ++j) {
    const Tensor* n = g.nodes()[j];
    for (int s = 0; s < n->n_srcs(); ++s) {
      auto it = end.find(&root(*n->src[s]));
      if (it != end.end()) it->second = std::max(it->second, static_cast<int>(j));
    }
    if (n->view_src && n->has_flag(TENSOR_OUTPUT)) {
      if (auto it = end.find(n->view_src); it != end.end()) it->second = kForever;
    }
  }
  std::vector<Lifetime> out;
  for (const auto& [t, off] : plan.offsets) out.push_back({t, step.at(t), end.at(t), off, plan.sizes.at(t)});
  return out;
}

bool sanctioned_inplace(const Lifetime& a, const Lifetime& b) {
  return b.t->src[0] == a.t && op_info(b.t->op).inplace_safe && a.end == b.start && a.off == b.off;
}

std::string name_of(const Tensor* t) { return t->name.empty() ? std::string("<unnamed>") : t->name; }

// Pairs of tensors alive at the same time that share bytes (a node that took
// its dying source's block in place is not a conflict), as messages.
std::vector<std::string> overlaps(const std::vector<Lifetime>& lt) {
  std::vector<std::string> out;
  for (size_t i = 0; i < lt.size(); ++i) {
    for (size_t j = i + 1; j < lt.size(); ++j) {
      const Lifetime& a = lt[i];
      const Lifetime& b = lt[j];
      bool live_together = a.start <= b.end && b.start <= a.end;
      bool share_bytes = a.off < b.off + b.size && b.off < a.off + a.size;
      if (!live_together || !share_bytes) continue;
      if (sanctioned_inplace(a, b) || sanctioned_inplace(b, a)) continue;
      std::ostringstream os;
      os << "overlap: " << name_of(a.t) << " [" << a.start << ", " << a.end << "] @" << a.off << "+" << a.size
         << " and " << name_of(b.t) << " [" << b.start << ", " << b.end << "] @" << b.off << "+" << b.size;
      out.push_back(os.str());
    }
  }
  return out;
}

// Asserts no overlap of live tensors, plus alignment and bounds.
void check_plan(const Graph& g, const MemoryPlan& plan, size_t alignment) {
  std::vector<Lifetime> lt = lifetimes(g, plan);
  size_t naive = 0;
  for (const Lifetime& l : lt) {
    EXPECT_EQ(l.off % alignment, 0u) << name_of(l.t);
    EXPECT_EQ(l.size % alignment, 0u) << name_of(l.t);
    EXPECT_GE(l.size, nbytes(*l.t)) << name_of(l.t);
    EXPECT_LE(l.off + l.size, plan.arena_bytes) << name_of(l.t);
    naive += l.size;
  }
  EXPECT_EQ(naive, plan.naive_bytes);
  for (const std::string& msg : overlaps(lt)) ADD_FAILURE() << msg;
}

TEST(Planner, ChainReusesMemory) {
  Context ctx;
  Tensor* x = input(ctx, {1024, 256}, "x");  // 1 MiB
  Tensor* t = x;
  for (int i = 0; i < 10; ++i) t = (i % 2) ? silu(ctx, t) : scale(ctx, t, 1.5f);
  Graph g = Graph::build({t});
  MemoryPlan plan = plan_memory(g, 64);
  check_plan(g, plan, 64);
  const size_t mib = nbytes(*x);
  EXPECT_EQ(plan.naive_bytes, 11 * mib);
  EXPECT_LE(plan.arena_bytes, 3 * mib);
  EXPECT_GT(plan.n_inplace, 0);
}

TEST(Planner, ChainWithoutInplaceStillReuses) {
  Context ctx;
  Tensor* x = input(ctx, {1024, 256}, "x");
  Tensor* t = x;
  for (int i = 0; i < 10; ++i) t = cont(ctx, t);  // cont is not inplace_safe
  Graph g = Graph::build({t});
  MemoryPlan plan = plan_memory(g, 64);
  check_plan(g, plan, 64);
  EXPECT_EQ(plan.n_inplace, 0);
  EXPECT_EQ(plan.arena_bytes, 3 * nbytes(*x));  // input + two ping-pong blocks
  EXPECT_EQ(plan.naive_bytes, 11 * nbytes(*x));
}

TEST(Planner, InputsAndOutputsAreNeverReused) {
  Context ctx;
  Tensor* x = input(ctx, {256, 16}, "x");
  Tensor* a = set_name(silu(ctx, x), "a");
  Tensor* mid_out = set_name(exp(ctx, a), "mid_out");
  Tensor* t = mid_out;
  for (int i = 0; i < 6; ++i) t = cont(ctx, t);
  Tensor* last = set_name(cont(ctx, t), "last");
  Graph g = Graph::build({last, mid_out});
  MemoryPlan plan = plan_memory(g, 32);
  check_plan(g, plan, 32);
  for (const Tensor* keep : {static_cast<const Tensor*>(x), static_cast<const Tensor*>(mid_out)}) {
    size_t ko = plan.offsets.at(keep), ks = plan.sizes.at(keep);
    for (const auto& [t2, off] : plan.offsets) {
      if (t2 == keep) continue;
      bool overlap = off < ko + ks && ko < off + plan.sizes.at(t2);
      bool is_inplace_src = t2 == a && keep == mid_out;  // mid_out took a's block, a was dead
      EXPECT_TRUE(!overlap || is_inplace_src) << name_of(keep) << " shares bytes with " << name_of(t2);
    }
  }
}

TEST(Planner, InplaceOnlyForSafeOpsWithSingleConsumer) {
  Context ctx;
  Tensor* x = input(ctx, {128, 8}, "x");
  Tensor* a = silu(ctx, x);  // source is an input: no in-place
  Tensor* b = exp(ctx, a);   // a has two consumers: no in-place
  Tensor* c = sigmoid(ctx, a);
  Tensor* d = add(ctx, b, c);       // b: single consumer, safe op -> in-place
  Tensor* e = cont(ctx, d);         // cont is not inplace_safe
  Tensor* f = scale(ctx, e, 2.0f);  // e: single consumer -> in-place
  Graph g = Graph::build({f});
  MemoryPlan plan = plan_memory(g, 16);
  check_plan(g, plan, 16);
  EXPECT_NE(plan.offsets.at(a), plan.offsets.at(x));
  EXPECT_NE(plan.offsets.at(b), plan.offsets.at(a));
  EXPECT_NE(plan.offsets.at(c), plan.offsets.at(a));
  EXPECT_EQ(plan.offsets.at(d), plan.offsets.at(b));
  EXPECT_NE(plan.offsets.at(e), plan.offsets.at(d));
  EXPECT_EQ(plan.offsets.at(f), plan.offsets.at(e));
  EXPECT_EQ(plan.n_inplace, 2);
}

TEST(Planner, NoInplaceIntoOutputOrViewedSource) {
  Context ctx;
  Tensor* x = input(ctx, {64, 4}, "x");
  Tensor* a = silu(ctx, x);
  Tensor* b = exp(ctx, a);  // a is an output: b must not clobber it
  Tensor* c = cont(ctx, x);
  Tensor* v = reshape(ctx, c, {256});
  Tensor* d = silu(ctx, c);  // c also has a view: no in-place
  Graph g = Graph::build({b, a, exp(ctx, v), d});
  MemoryPlan plan = plan_memory(g, 16);
  check_plan(g, plan, 16);
  EXPECT_NE(plan.offsets.at(b), plan.offsets.at(a));
  EXPECT_NE(plan.offsets.at(d), plan.offsets.at(c));
}

TEST(Planner, ViewsKeepTheirRootAlive) {
  Context ctx;
  Tensor* x = input(ctx, {256, 16}, "x");
  Tensor* big = set_name(cont(ctx, x), "big");
  Tensor* half = view_2d(ctx, big, 256, 8, big->nb[1], 8 * big->nb[1]);
  Tensor* head = view_2d(ctx, half, 256, 4, half->nb[1], 0);  // a view of a view: root is big
  Tensor* t = cont(ctx, head);
  for (int i = 0; i < 5; ++i) t = cont(ctx, t);  // allocations while only views hold big
  // order: big, half, head, the chain, concat, then the late reader of half
  Tensor* out = add(ctx, concat(ctx, t, t, 1), cont(ctx, half));
  Graph g = Graph::build({out});
  MemoryPlan plan = plan_memory(g, 64);
  check_plan(g, plan, 64);
  EXPECT_EQ(plan.offsets.count(half), 0u);  // views take no memory
  EXPECT_EQ(plan.offsets.count(head), 0u);
  size_t bo = plan.offsets.at(big), bs = plan.sizes.at(big);
  for (const auto& [t2, off] : plan.offsets) {
    if (t2 == big || t2 == x) continue;
    if (t2 == out || (t2->op == Op::CONT && t2->src[0] == half)) continue;  // after big's last reader
    EXPECT_FALSE(off < bo + bs && bo < off + plan.sizes.at(t2)) << "reused big's bytes while a view needed them";
  }
}

TEST(Planner, SetRowsIntoCacheAllocatesNothing) {
  Context ctx;
  std::vector<float> cache_mem(64 * 16);
  Tensor* cache = ctx.new_tensor(DType::F32, {64, 16}, "cache");
  cache->data = cache_mem.data();
  Tensor* x = input(ctx, {64, 2}, "x");
  Tensor* ids = ctx.new_tensor(DType::I32, {2}, "ids");
  ids->flags |= TENSOR_INPUT;
  Tensor* stored = set_rows(ctx, cache, silu(ctx, x), ids);
  Graph g = Graph::build({stored});
  MemoryPlan plan = plan_memory(g, 32);
  check_plan(g, plan, 32);
  EXPECT_EQ(plan.offsets.count(stored), 0u);
  EXPECT_EQ(plan.offsets.count(cache), 0u);
  EXPECT_EQ(plan.offsets.count(x), 1u);
  EXPECT_EQ(plan.offsets.count(ids), 1u);
}

TEST(Planner, BackendFilterPlansOnlyThatBackend) {
  Context ctx;
  Tensor* x = input(ctx, {64}, "x");
  Tensor* a = silu(ctx, x);
  Tensor* b = exp(ctx, a);
  Graph g = Graph::build({b});
  x->backend_id = 0;
  a->backend_id = 0;
  b->backend_id = 1;
  MemoryPlan p0 = plan_memory(g, 16, 0);
  MemoryPlan p1 = plan_memory(g, 16, 1);
  EXPECT_EQ(p0.offsets.size(), 2u);
  EXPECT_EQ(p1.offsets.size(), 1u);
  EXPECT_EQ(p1.offsets.count(b), 1u);
}

// Random DAGs of elementwise ops, norms, matmuls, copies and views.
Graph random_graph(Context& ctx, std::mt19937& rng, int n_ops) {
  std::vector<Tensor*> pool = {input(ctx, {32, 16}, "x0"), input(ctx, {32, 16}, "x1")};
  std::vector<Tensor*> outputs;
  auto pick = [&]() { return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]; };
  for (int i = 0; i < n_ops; ++i) {
    Tensor* a = pick();
    Tensor* b = pick();
    Tensor* t = nullptr;
    switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
      case 0: t = add(ctx, a, b); break;
      case 1: t = mul(ctx, a, b); break;
      case 2: t = silu(ctx, a); break;
      case 3: t = rms_norm(ctx, a, 1e-5f); break;
      case 4: t = scale(ctx, a, 0.5f); break;
      case 5: t = cont(ctx, transpose(ctx, reshape(ctx, a, {16, 32}))); break;
      case 6: {
        Tensor* m = mul_mat(ctx, a, b);  // [16, 16]
        t = reshape(ctx, concat(ctx, m, m, 1), {32, 16});
        break;
      }
      case 7: {
        Tensor* v = view_2d(ctx, a, 32, 8, a->nb[1], 8 * a->nb[1]);
        t = concat(ctx, v, exp(ctx, v), 1);
        break;
      }
      default: t = reshape(ctx, a, {16, 32}); break;
    }
    if (t->ne[0] != 32) t = reshape(ctx, t, {32, 16});
    if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) outputs.push_back(t);
    pool.push_back(t);
  }
  outputs.push_back(pool.back());
  return Graph::build(std::span<Tensor* const>(outputs));
}

TEST(Planner, RandomGraphsNeverOverlapLiveTensors) {
  for (unsigned seed = 1; seed <= 100; ++seed) {
    for (size_t alignment : {size_t{1}, size_t{32}, size_t{256}}) {
      Context ctx;
      std::mt19937 rng(seed);
      Graph g = random_graph(ctx, rng, 60);
      ASSERT_TRUE(g.verify().ok()) << g.verify().error();
      MemoryPlan plan = plan_memory(g, alignment);
      SCOPED_TRACE("seed " + std::to_string(seed) + " alignment " + std::to_string(alignment));
      check_plan(g, plan, alignment);
      EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
      if (HasFailure()) return;
    }
  }
}

TEST(Planner, CheckerCatchesOverlap) {
  Context ctx;
  Tensor* x = input(ctx, {64, 4}, "x");
  Tensor* a = cont(ctx, x);
  Tensor* b = cont(ctx, x);
  Graph g = Graph::build({add(ctx, a, b)});
  MemoryPlan plan = plan_memory(g, 16);
  EXPECT_TRUE(overlaps(lifetimes(g, plan)).empty());
  plan.offsets[b] = plan.offsets[a];  // a and b are both alive at the add
  EXPECT_FALSE(overlaps(lifetimes(g, plan)).empty());
}

// A small attention block: rope, permutes, batched mul_mat, causal softmax.
TEST(Planner, AttentionBlockPlanIsSound) {
  Context ctx;
  const int64_t D = 16, H = 4, T = 8;
  Tensor* x = input(ctx, {D * H, T}, "x");
  Tensor* pos = ctx.new_tensor(DType::I32, {T}, "pos");
  pos->flags |= TENSOR_INPUT;
  Tensor* xn = rms_norm(ctx, x, 1e-6f);
  auto head = [&](Tensor* t) {
    return permute(ctx, rope(ctx, reshape(ctx, cont(ctx, t), {D, H, T}), pos, 16, 1e4f, RopeMode::NEOX), 0, 2, 1, 3);
  };
  Tensor* kq = softmax(ctx, mul_mat(ctx, head(scale(ctx, xn, 0.5f)), head(xn)), nullptr, 0.25f, true);
  Tensor* v = cont(ctx, permute(ctx, reshape(ctx, cont(ctx, xn), {D, H, T}), 1, 2, 0, 3));
  Tensor* o = reshape(ctx, cont(ctx, permute(ctx, mul_mat(ctx, v, kq), 0, 2, 1, 3)), {D * H, T});
  Graph g = Graph::build({add(ctx, o, x)});
  ASSERT_TRUE(g.verify().ok()) << g.verify().error();
  MemoryPlan plan = plan_memory(g, 64);
  check_plan(g, plan, 64);
  EXPECT_LT(plan.arena_bytes, plan.naive_bytes);
}

TEST(Planner, BindPlanSetsDataOfTensorsAndViews) {
  Context ctx;
  Tensor* x = input(ctx, {64, 4}, "x");
  Tensor* a = cont(ctx, x);
  Tensor* v = view_1d(ctx, a, 64, 64 * sizeof(float));
  Tensor* out = silu(ctx, v);
  Graph g = Graph::build({out});
  MemoryPlan plan = plan_memory(g, 64);
  test::FakeBackend be("fake");
  auto arena = be.alloc_buffer(plan.arena_bytes, BufferUsage::COMPUTE);
  bind_plan(g, plan, *arena);
  auto* base = static_cast<char*>(arena->base());
  for (const Tensor* t : {x, a, out}) {
    EXPECT_EQ(t->data, base + plan.offsets.at(t));
    EXPECT_EQ(t->buffer, arena.get());
    EXPECT_EQ(t->arena_offset, static_cast<int64_t>(plan.offsets.at(t)));
  }
  EXPECT_EQ(v->data, static_cast<char*>(a->data) + 64 * sizeof(float));
  EXPECT_EQ(v->arena_offset, a->arena_offset + static_cast<int64_t>(64 * sizeof(float)));

  // Planning again after binding gives the same plan (bound inputs still count as planned).
  MemoryPlan again = plan_memory(g, 64);
  EXPECT_EQ(again.offsets, plan.offsets);
  EXPECT_EQ(again.arena_bytes, plan.arena_bytes);
}

TEST(Planner, RekeyMovesAPlanOntoAnEqualGraph) {
  auto build = [](Context& ctx) {
    Tensor* x = input(ctx, {64, 4}, "x");
    return Graph::build({exp(ctx, silu(ctx, cont(ctx, x)))});
  };
  Context c1, c2;
  Graph g1 = build(c1);
  Graph g2 = build(c2);
  MemoryPlan plan = plan_memory(g1, 32);
  MemoryPlan fresh = plan_memory(g2, 32);
  rekey_plan(plan, g2);
  EXPECT_EQ(plan.offsets, fresh.offsets);
  EXPECT_EQ(plan.sizes, fresh.sizes);
}

}  // namespace
}  // namespace gl

namespace gl {
namespace {

// A backend whose SILU kernel wants 4 KiB of scratch.
class ScratchBackend final : public test::FakeBackend {
 public:
  ScratchBackend() : FakeBackend("scratch") {}
  size_t workspace_size(const Tensor& node) const override { return node.op == Op::SILU ? 4000 : 0; }
};

// Each SILU's scratch is a block of its own during its step: it overlaps no tensor alive at that
// step, it is reused afterwards, and bind_plan (also after a rekey) points node.workspace at it.
TEST(Planner, WorkspaceLivesForItsNodeOnly) {
  ScratchBackend be;
  auto build = [](Context& ctx) {
    Tensor* t = input(ctx, {256, 8}, "x");  // 8 KiB
    for (int i = 0; i < 6; ++i) t = (i % 2) ? silu(ctx, t) : scale(ctx, t, 1.5f);
    return Graph::build({t});
  };
  Context ctx;
  Graph g = build(ctx);
  const MemoryPlan plan = plan_memory(g, 64, -1, &be);
  ASSERT_EQ(plan.workspaces.size(), 3u);
  const std::vector<Lifetime> lt = lifetimes(g, plan);
  for (size_t j = 0; j < g.nodes().size(); ++j) {
    const Tensor* n = g.nodes()[j];
    auto ws = plan.workspaces.find(n);
    ASSERT_EQ(ws != plan.workspaces.end(), n->op == Op::SILU) << n->name;
    if (ws == plan.workspaces.end()) continue;
    EXPECT_EQ(ws->second % 64, 0u);
    EXPECT_EQ(plan.workspace_sizes.at(n), 4032u);  // 4000 aligned to 64
    EXPECT_EQ(plan.workspace_slots[j].size, 4032u);
    EXPECT_LE(ws->second + 4000, plan.arena_bytes);
    for (const Lifetime& l : lt) {
      const bool live = l.start <= static_cast<int>(j) && static_cast<int>(j) <= l.end;
      const bool shared = ws->second < l.off + l.size && l.off < ws->second + 4000;
      EXPECT_FALSE(live && shared) << n->name << "'s scratch overlaps " << name_of(l.t);
    }
  }
  // Without reuse three 4 KiB blocks would add 12 KiB; reused, the peak grows by one at most.
  const MemoryPlan bare = plan_memory(g, 64);
  EXPECT_LE(plan.arena_bytes, bare.arena_bytes + 4032);

  auto arena = be.alloc_buffer(plan.arena_bytes, BufferUsage::COMPUTE);
  bind_plan(g, plan, *arena);
  for (const auto& [n, off] : plan.workspaces) EXPECT_EQ(n->workspace, static_cast<char*>(arena->base()) + off);

  Context ctx2;
  Graph g2 = build(ctx2);
  MemoryPlan moved = plan;
  rekey_plan(moved, g2);
  bind_plan(g2, moved, *arena);
  for (size_t j = 0; j < g.nodes().size(); ++j) EXPECT_EQ(g2.nodes()[j]->workspace, g.nodes()[j]->workspace);
}

// SILU kernels whose scratch holds something of their source's: siblings of one source share it.
class SharedScratchBackend final : public test::FakeBackend {
 public:
  SharedScratchBackend() : FakeBackend("shared-scratch") {}
  size_t workspace_size(const Tensor& node) const override { return node.op == Op::SILU ? 4000 : 0; }
  const Tensor* workspace_share(const Tensor& node) const override {
    return node.op == Op::SILU && node.src[0]->op != Op::NONE ? node.src[0] : nullptr;
  }
};

// The SILUs of one source get one block, held from the first to the last of them: no tensor
// alive at any step in between overlaps it. A SILU without a sibling gets a block of its own.
TEST(Planner, SharedWorkspaceLivesFromTheFirstOfItsNodesToTheLast) {
  SharedScratchBackend be;
  Context ctx;
  Tensor* x = scale(ctx, input(ctx, {256, 8}, "x"), 2.0f);
  Tensor* a = silu(ctx, x);
  Tensor* m = scale(ctx, a, 1.5f);  // placed while the shared block is held
  Tensor* b = silu(ctx, x);
  Tensor* out = silu(ctx, add(ctx, m, b));  // its source has no sibling SILU
  Graph g = Graph::build({out});
  const MemoryPlan plan = plan_memory(g, 64, -1, &be);
  ASSERT_EQ(plan.workspaces.size(), 3u);
  EXPECT_EQ(plan.n_shared_workspaces, 2);
  ASSERT_EQ(plan.workspaces.at(a), plan.workspaces.at(b));
  EXPECT_NE(plan.workspaces.at(out), plan.workspaces.at(a));
  const auto pos = [&](const Tensor* t) {
    return static_cast<int>(std::find(g.nodes().begin(), g.nodes().end(), t) - g.nodes().begin());
  };
  const size_t ws = plan.workspaces.at(a);
  for (const Lifetime& l : lifetimes(g, plan)) {
    const bool live = l.start <= pos(b) && pos(a) <= l.end;
    const bool shared = ws < l.off + l.size && l.off < ws + 4000;
    EXPECT_FALSE(live && shared) << "the shared scratch overlaps " << name_of(l.t);
  }
}

// A source with a view (something may write through it between the SILUs) gets no shared block.
TEST(Planner, NoSharedWorkspaceForASourceWithViews) {
  SharedScratchBackend be;
  Context ctx;
  Tensor* x = scale(ctx, input(ctx, {256, 8}, "x"), 2.0f);
  Tensor* v = view_1d(ctx, x, 256, 0);
  Graph g = Graph::build({add(ctx, silu(ctx, x), silu(ctx, x)), scale(ctx, v, 3.0f)});
  const MemoryPlan plan = plan_memory(g, 64, -1, &be);
  EXPECT_EQ(plan.workspaces.size(), 2u);
  EXPECT_EQ(plan.n_shared_workspaces, 0);
}

}  // namespace
}  // namespace gl
