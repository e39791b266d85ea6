// scheduler_test.cpp - placement passes, split cutting and the plan cache, with fake backends.
#include <gtest/gtest.h>

#include <algorithm>

#include "fake_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/scheduler.h"

namespace gl {
namespace {

using test::FakeBackend;

Tensor* input(Context& ctx, std::initializer_list<int64_t> ne, const char* name) {
  Tensor* t = ctx.new_tensor(DType::F32, ne, name);
  t->flags |= TENSOR_INPUT;
  return t;
}

bool contains(const std::vector<Tensor*>& v, const Tensor* t) { return std::find(v.begin(), v.end(), t) != v.end(); }

struct Chain {
  Tensor *x, *a, *b, *c, *out;
};

// x -> a = scale(x) -> b = silu(a) -> c = exp(b) -> out = add(c, a)
Chain build_chain(Context& ctx, int64_t n = 64) {
  Chain ch;
  ch.x = input(ctx, {n, 8}, "x");
  ch.a = set_name(scale(ctx, ch.x, 2.0f), "a");
  ch.b = set_name(silu(ctx, ch.a), "b");
  ch.c = set_name(exp(ctx, ch.b), "c");
  ch.out = set_name(add(ctx, ch.c, ch.a), "out");
  return ch;
}

TEST(Scheduler, SingleBackendOneSplit) {
  FakeBackend cpu("cpu");
  Scheduler sched({&cpu});
  Context ctx;
  Chain ch = build_chain(ctx);
  Graph g = Graph::build({ch.out});
  const SchedulePlan& plan = sched.schedule(g);
  ASSERT_EQ(plan.splits.size(), 1u);
  EXPECT_EQ(plan.splits[0].nodes, g.nodes());
  EXPECT_TRUE(plan.splits[0].inputs_from_elsewhere.empty());
  EXPECT_EQ(plan.n_fallback, 0);
  for (const Tensor* n : g.nodes()) EXPECT_EQ(n->backend_id, 0);
  EXPECT_EQ(ch.x->backend_id, 0);
}

TEST(Scheduler, UnsupportedOpFallsBackAndCutsSplits) {
  FakeBackend gpu("gpu", {Op::SILU});
  FakeBackend cpu("cpu");
  Scheduler sched({&gpu, &cpu});
  Context ctx;
  Chain ch = build_chain(ctx);
  Graph g = Graph::build({ch.out});
  const SchedulePlan& plan = sched.schedule(g);

  EXPECT_EQ(plan.n_fallback, 1);
  EXPECT_EQ(ch.a->backend_id, 0);
  EXPECT_EQ(ch.b->backend_id, 1);
  EXPECT_EQ(ch.c->backend_id, 0);
  EXPECT_EQ(ch.out->backend_id, 0);
  EXPECT_EQ(ch.x->backend_id, 0);  // an input lives where it is first read
  ASSERT_EQ(plan.splits.size(), 3u);
  EXPECT_EQ(plan.splits[0].backend, &gpu);
  EXPECT_EQ(plan.splits[0].nodes, std::vector<Tensor*>{ch.a});
  EXPECT_TRUE(plan.splits[0].inputs_from_elsewhere.empty());
  EXPECT_EQ(plan.splits[1].backend, &cpu);
  EXPECT_EQ(plan.splits[1].nodes, std::vector<Tensor*>{ch.b});
  EXPECT_EQ(plan.splits[1].inputs_from_elsewhere, std::vector<Tensor*>{ch.a});
  EXPECT_EQ(plan.splits[2].backend, &gpu);
  EXPECT_EQ(plan.splits[2].nodes, (std::vector<Tensor*>{ch.c, ch.out}));
  EXPECT_EQ(plan.splits[2].inputs_from_elsewhere, std::vector<Tensor*>{ch.b});
  ASSERT_EQ(plan.node_backend.size(), g.nodes().size());
}

TEST(Scheduler, WeightsPullTheirConsumer) {
  FakeBackend gpu("gpu");
  FakeBackend cpu("cpu");
  Scheduler sched({&gpu, &cpu});
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Tensor* w = ctx.new_tensor(DType::F32, {64, 32}, "w");
  auto wbuf = cpu.alloc_buffer(nbytes(*w), BufferUsage::WEIGHTS);
  wbuf->bind(*w, 0);
  Tensor* h = set_name(mul_mat(ctx, w, x), "h");  // weights on cpu -> cpu
  Tensor* out = set_name(silu(ctx, h), "out");    // no weights -> first backend
  Graph g = Graph::build({out});
  const SchedulePlan& plan = sched.schedule(g);
  EXPECT_EQ(h->backend_id, 1);
  EXPECT_EQ(out->backend_id, 0);
  EXPECT_EQ(w->backend_id, 1);
  EXPECT_EQ(plan.n_fallback, 0);
  ASSERT_EQ(plan.splits.size(), 2u);
  EXPECT_EQ(plan.splits[1].inputs_from_elsewhere, std::vector<Tensor*>{h});
}

TEST(Scheduler, WeightBackendWithoutSupportDoesNotPull) {
  FakeBackend gpu("gpu");
  FakeBackend cpu("cpu", {Op::MUL_MAT});
  Scheduler sched({&gpu, &cpu});
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Tensor* w = ctx.new_tensor(DType::F32, {64, 32}, "w");
  auto wbuf = cpu.alloc_buffer(nbytes(*w), BufferUsage::WEIGHTS);
  wbuf->bind(*w, 0);
  Tensor* h = mul_mat(ctx, w, x);
  Graph g = Graph::build({h});
  const SchedulePlan& plan = sched.schedule(g);
  EXPECT_EQ(h->backend_id, 0);
  ASSERT_EQ(plan.splits.size(), 1u);
  EXPECT_TRUE(contains(plan.splits[0].inputs_from_elsewhere, w));
}

TEST(Scheduler, ViewsGoWithTheirSourceAndNeverCutSplits) {
  FakeBackend gpu("gpu", {Op::EXP});
  FakeBackend cpu("cpu");
  Scheduler sched({&gpu, &cpu});
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Tensor* a = exp(ctx, x);   // cpu (fallback)
  Tensor* b = silu(ctx, a);  // gpu
  Tensor* rb = reshape(ctx, b, {512});
  Tensor* v = reshape(ctx, a, {512});  // view of a cpu tensor, visited while the gpu split is open
  Tensor* out = add(ctx, rb, v);
  Graph g = Graph::build({out});
  ASSERT_EQ(g.nodes(), (std::vector<Tensor*>{a, b, rb, v, out}));
  const SchedulePlan& plan = sched.schedule(g);
  EXPECT_EQ(a->backend_id, 1);
  EXPECT_EQ(v->backend_id, 1);
  EXPECT_EQ(b->backend_id, 0);
  EXPECT_EQ(rb->backend_id, 0);
  EXPECT_EQ(out->backend_id, 0);
  EXPECT_EQ(plan.n_fallback, 1);
  ASSERT_EQ(plan.splits.size(), 2u);
  EXPECT_EQ(plan.splits[0].nodes, std::vector<Tensor*>{a});
  EXPECT_EQ(plan.splits[1].nodes, (std::vector<Tensor*>{b, rb, v, out}));
  EXPECT_EQ(plan.splits[1].inputs_from_elsewhere, (std::vector<Tensor*>{a, v}));
}

TEST(Scheduler, PlanIsCachedByFingerprint) {
  FakeBackend gpu("gpu", {Op::SILU});
  FakeBackend cpu("cpu");
  Scheduler sched({&gpu, &cpu});
  Context c1;
  Chain ch1 = build_chain(c1);
  Graph g1 = Graph::build({ch1.out});
  sched.schedule(g1);
  sched.schedule(g1);
  EXPECT_EQ(sched.n_planned(), 1);
  EXPECT_EQ(sched.n_cached(), 1);

  // An equal graph from another context reuses the plan; the splits point at its tensors.
  Context c2;
  Chain ch2 = build_chain(c2);
  Graph g2 = Graph::build({ch2.out});
  const SchedulePlan& p2 = sched.schedule(g2);
  EXPECT_EQ(sched.n_planned(), 1);
  EXPECT_EQ(p2.fingerprint, g2.fingerprint());
  ASSERT_EQ(p2.splits.size(), 3u);
  EXPECT_EQ(p2.splits[1].nodes, std::vector<Tensor*>{ch2.b});
  EXPECT_EQ(p2.splits[1].inputs_from_elsewhere, std::vector<Tensor*>{ch2.a});
  EXPECT_EQ(ch2.b->backend_id, 1);
  EXPECT_EQ(ch2.c->backend_id, 0);

  // Another shape is another plan.
  Context c3;
  Chain ch3 = build_chain(c3, 128);
  sched.schedule(Graph::build({ch3.out}));
  EXPECT_EQ(sched.n_planned(), 2);
  EXPECT_EQ(sched.n_cached(), 2);
}

}  // namespace
}  // namespace gl
