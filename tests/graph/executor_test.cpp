// executor_test.cpp - allocate/compute flow with fake backends, and one end-to-end run on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fake_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::FakeBackend;

Tensor* input(Context& ctx, std::initializer_list<int64_t> ne, const char* name) {
  Tensor* t = ctx.new_tensor(DType::F32, ne, name);
  t->flags |= TENSOR_INPUT;
  return t;
}

Graph chain(Context& ctx, int64_t n, Tensor** x_out = nullptr) {
  Tensor* x = input(ctx, {n, 4}, "x");
  if (x_out) *x_out = x;
  return Graph::build({add(ctx, exp(ctx, silu(ctx, x)), x)});
}

TEST(Executor, AllocateBindsInputsAndReusesPlans) {
  FakeBackend be("fake");
  Executor ex({&be});
  Context c1;
  Tensor* x1 = nullptr;
  Graph g1 = chain(c1, 64, &x1);
  ASSERT_TRUE(ex.allocate(g1).ok());
  ASSERT_NE(ex.arena(), nullptr);
  EXPECT_NE(x1->data, nullptr);
  for (const Tensor* n : g1.nodes()) EXPECT_NE(n->data, nullptr);
  const MemoryPlan* plan = ex.last_plan();
  ASSERT_NE(plan, nullptr);
  EXPECT_GE(ex.arena()->size(), plan->arena_bytes);
  ASSERT_TRUE(ex.compute(g1).ok());
  EXPECT_EQ(be.n_compute_calls, 1);

  // The same graph rebuilt: no new schedule, no new plan, no new arena.
  Context c2;
  Tensor* x2 = nullptr;
  Graph g2 = chain(c2, 64, &x2);
  ASSERT_TRUE(ex.allocate(g2).ok());
  EXPECT_EQ(ex.last_plan(), plan);
  EXPECT_EQ(ex.scheduler().n_planned(), 1);
  EXPECT_EQ(be.n_buffers, 1);
  EXPECT_EQ(x2->data, x1->data);
  EXPECT_EQ(g2.nodes().back()->data, g1.nodes().back()->data);

  std::vector<float> in(256, 1.5f), out(256, 0.0f);
  ex.set_input(*x2, in.data());
  ex.get_output(*x2, out.data());
  EXPECT_EQ(in, out);
}

TEST(Executor, ComputeBeforeAllocateIsAnError) {
  FakeBackend be("fake");
  Executor ex({&be});
  Context ctx;
  Graph g = chain(ctx, 16);
  Status s = ex.compute(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("allocate"), std::string::npos) << s.error();
}

TEST(Executor, GraphsMustBeReallocatedAfterTheArenaGrows) {
  FakeBackend be("fake");
  Executor ex({&be});
  Context c1, c2;
  Graph small = chain(c1, 16);
  Graph big = chain(c2, 4096);
  ASSERT_TRUE(ex.allocate(small).ok());
  ASSERT_TRUE(ex.allocate(big).ok());
  EXPECT_FALSE(ex.compute(small).ok());
  ASSERT_TRUE(ex.allocate(small).ok());
  EXPECT_TRUE(ex.compute(small).ok());
  EXPECT_TRUE(ex.compute(big).ok());
}

TEST(Executor, PlainHostMemoryIsCopiedToADeviceBackend) {
  FakeBackend dev("dev", {}, /*host=*/false);
  Executor ex({&dev});
  Context ctx;
  std::vector<float> host(64, 1.0f);
  Tensor* w = ctx.new_tensor(DType::F32, {64}, "host_w");
  w->data = host.data();  // host memory outside any backend buffer
  Tensor* x = input(ctx, {64}, "x");
  Graph g = Graph::build({add(ctx, x, w)});
  ASSERT_TRUE(ex.allocate(g).ok());
  Status s = ex.compute(g);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(ex.n_copies(), 1);
  EXPECT_EQ(w->data, host.data());  // the node read a staged copy; the graph is restored
  EXPECT_EQ(g.nodes().back()->src[1], w);
}

TEST(Executor, EachBackendGetsItsOwnArena) {
  FakeBackend dev("dev", {Op::EXP}, /*host=*/false);
  FakeBackend cpu("cpu");
  Executor ex({&dev, &cpu});
  Context ctx;
  Graph g = chain(ctx, 16);  // silu on dev, exp falls back to cpu, add on dev
  ASSERT_TRUE(ex.allocate(g).ok());
  ASSERT_NE(ex.arena(0), nullptr);
  ASSERT_NE(ex.arena(1), nullptr);
  EXPECT_EQ(dev.n_buffers, 1);
  EXPECT_EQ(cpu.n_buffers, 1);
  for (const Tensor* n : g.nodes()) EXPECT_EQ(n->buffer, ex.arena(n->backend_id)) << n->name;
  Status s = ex.compute(g);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(ex.n_copies(), 2);  // silu's result to the cpu, exp's result back
  EXPECT_EQ(dev.n_compute_calls, 2);
  EXPECT_EQ(cpu.n_compute_calls, 1);
}

// rms_norm -> mul by a weight -> residual add, on the CPU reference backend,
// against a float64 computation by hand.
TEST(Executor, EndToEndOnCpu) {
  constexpr int64_t kCols = 64, kRows = 8;
  constexpr float kEps = 1e-6f;
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ex({cpu.get()});

  Context ctx;
  Tensor* x = input(ctx, {kCols, kRows}, "x");
  Tensor* w = ctx.new_tensor(DType::F32, {kCols}, "norm.weight");
  w->flags |= TENSOR_WEIGHT;
  auto wbuf = cpu->alloc_buffer(nbytes(*w), BufferUsage::WEIGHTS);
  ASSERT_NE(wbuf, nullptr);
  wbuf->bind(*w, 0);
  Tensor* y = add(ctx, mul(ctx, rms_norm(ctx, x, kEps), w), x);
  Graph g = Graph::build({y});

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> xs(kCols * kRows), ws(kCols);
  for (float& v : xs) v = dist(rng);
  for (float& v : ws) v = dist(rng);
  cpu->set_tensor(*w, ws.data(), 0, nbytes(*w));

  ASSERT_TRUE(g.verify().ok()) << g.verify().error();
  ASSERT_TRUE(ex.allocate(g).ok());
  ex.set_input(*x, xs.data());
  Status s = ex.compute(g);
  ASSERT_TRUE(s.ok()) << s.error();
  std::vector<float> out(kCols * kRows);
  ex.get_output(*y, out.data());

  for (int64_t r = 0; r < kRows; ++r) {
    double ss = 0.0;
    for (int64_t c = 0; c < kCols; ++c) ss += double(xs[r * kCols + c]) * xs[r * kCols + c];
    const double inv = 1.0 / std::sqrt(ss / kCols + kEps);
    for (int64_t c = 0; c < kCols; ++c) {
      const double ref = double(xs[r * kCols + c]) * inv * ws[c] + xs[r * kCols + c];
      EXPECT_NEAR(out[r * kCols + c], ref, 1e-5 * (1.0 + std::abs(ref))) << "row " << r << " col " << c;
    }
  }
}

}  // namespace
}  // namespace gl
