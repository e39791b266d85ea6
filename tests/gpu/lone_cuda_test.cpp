// lone_cuda_test.cpp - the CUDA backend asked for alone (Executor({cuda})): nodes it declines run
// on the CPU fallback that the scheduler adds itself, with the CPU's results. Two declined nodes:
// one the real CUDA backend declines (flash attention with 512-wide heads, past its kernel's
// limit) and a deliberately declined (op, dtype) pair, MUL_MAT with F16 weights, through
// RestrictedBackend. Both skip without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/cuda.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::random_floats;

#define GL_REQUIRE_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible"

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // The GPU sums in another order than the CPU: allow float rounding.
    EXPECT_NEAR(got[i], want[i], 1e-3 * (1.0 + std::fabs(want[i]))) << "[" << i << "]";
  }
}

constexpr int64_t kHead = 512, kHeads = 2, kTokens = 3, kKv = 7;

// o = scale(flash_attn(q, k, v) + 1): the attention is declined, the rest runs on the device.
struct Attention {
  Context ctx;
  Tensor *q, *k, *v, *attn, *o;
  Graph graph;
  Attention() {
    q = ctx.new_tensor(DType::F32, {kHead, kHeads, kTokens}, "q");
    k = ctx.new_tensor(DType::F32, {kHead, kHeads, kKv}, "k");
    v = ctx.new_tensor(DType::F32, {kHead, kHeads, kKv}, "v");
    for (Tensor* t : {q, k, v}) t->flags |= TENSOR_INPUT;
    attn = set_name(flash_attn(ctx, q, k, v, nullptr, 1.0f / std::sqrt(float(kHead))), "attn");
    o = set_name(scale(ctx, silu(ctx, attn), 0.5f), "o");
    o->flags |= TENSOR_OUTPUT;
    graph = Graph::build({o});
  }
  std::vector<float> run(Executor& ex) {
    Status s = ex.allocate(graph);
    EXPECT_TRUE(s.ok()) << s.error();
    uint32_t seed = 1;
    for (Tensor* t : {q, k, v}) ex.set_input(*t, random_floats(static_cast<size_t>(nelements(*t)), seed++).data());
    s = ex.compute(graph);
    EXPECT_TRUE(s.ok()) << s.error();
    std::vector<float> out(static_cast<size_t>(nelements(*o)));
    ex.get_output(*o, out.data());
    return out;
  }
};

TEST(LoneCuda, NodeTheGpuDeclinesRunsOnTheImplicitCpu) {
  GL_REQUIRE_GPU();
  std::unique_ptr<Backend> gpu = cuda::make_backend();
  Attention a;
  if (gpu->supports(*a.attn)) GTEST_SKIP() << "the CUDA backend now supports 512-wide heads: pick another node";
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({cpu.get()});
  const std::vector<float> want = a.run(ref);

  Executor ex({gpu.get()});
  for (int round = 0; round < 2; ++round) {  // the second round replays the cached plans
    expect_close(a.run(ex), want);
    EXPECT_EQ(a.attn->backend_id, 1);
    EXPECT_EQ(a.o->backend_id, 0);
    EXPECT_GT(ex.n_copies(), 0);
  }
  ASSERT_NE(ex.scheduler().implicit_fallback(), nullptr);
}

TEST(LoneCuda, DeclinedOpDtypePairRunsOnTheImplicitCpu) {
  GL_REQUIRE_GPU();
  constexpr int64_t kIn = 64, kOut = 48, kRows = 5;
  auto run = [&](Executor& ex, Backend& owner, int fallbacks) {
    Context c;
    Tensor* x = c.new_tensor(DType::F32, {kIn, kRows}, "x");
    x->flags |= TENSOR_INPUT;
    Tensor* w = c.new_tensor(DType::F16, {kIn, kOut}, "w16");
    w->flags |= TENSOR_WEIGHT;
    auto buf = owner.alloc_buffer(nbytes(*w), BufferUsage::WEIGHTS);
    buf->bind(*w, 0);
    std::vector<fp16_t> h(static_cast<size_t>(kIn * kOut));
    const std::vector<float> f = random_floats(h.size(), 4);
    for (size_t i = 0; i < h.size(); ++i) h[i] = fp32_to_fp16(f[i]);
    owner.set_tensor(*w, h.data(), 0, nbytes(*w));
    Tensor* p = mul_mat(c, w, x);
    Tensor* y = add(c, silu(c, p), scale(c, p, 2.0f));
    y->flags |= TENSOR_OUTPUT;
    Graph g = Graph::build({y});
    EXPECT_TRUE(ex.allocate(g).ok());
    EXPECT_EQ(ex.scheduler().schedule(g).n_fallback, fallbacks);
    ex.set_input(*x, random_floats(kIn * kRows, 5).data());
    Status s = ex.compute(g);
    EXPECT_TRUE(s.ok()) << s.error();
    std::vector<float> out(static_cast<size_t>(nelements(*y)));
    ex.get_output(*y, out.data());
    return out;
  };
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({cpu.get()});
  const std::vector<float> want = run(ref, *cpu, 0);

  test::RestrictedBackend gpu(cuda::make_backend(), {});
  gpu.declines = [](const Tensor& n) { return n.op == Op::MUL_MAT && n.src[0]->type == DType::F16; };
  Executor ex({&gpu});
  expect_close(run(ex, gpu, 1), want);
  EXPECT_GT(ex.n_copies(), 0);
}

}  // namespace
}  // namespace gl
