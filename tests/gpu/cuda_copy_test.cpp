// cuda_copy_test.cpp - copies between backends ordered by events (Backend::record/wait,
// copy_from): CUDA -> CUDA between two backend objects (two streams; on one device here, the
// interface is the one two devices use), CPU -> CUDA -> CPU, and the executor's fallback copies
// run again and again with the device split replayed as a CUDA graph. Skips without a device.
#include <gtest/gtest.h>

#include <cstring>
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

constexpr int64_t kN = 1 << 20;  // 4 MiB of floats: past the pinned slots, a real device copy

struct Placed {
  Context ctx;
  Tensor* t = nullptr;
  std::unique_ptr<Buffer> buf;
  Placed(Backend& b, const char* name) {
    t = ctx.new_tensor(DType::F32, {kN}, name);
    buf = b.alloc_buffer(nbytes(*t), BufferUsage::COMPUTE);
    buf->bind(*t, 0);
  }
};

TEST(CudaCopy, CudaToCudaBetweenTwoBackendsWaitsOnTheProducersEvent) {
  GL_REQUIRE_GPU();
  std::unique_ptr<Backend> a = cuda::make_backend();
  std::unique_ptr<Backend> b = cuda::make_backend({.device = cuda::device_count() > 1 ? 1 : 0});
  Placed src(*a, "src"), dst(*b, "dst");
  const std::vector<float> want = random_floats(kN, 7);
  a->set_tensor(*src.t, want.data(), 0, nbytes(*src.t));  // queued on a's stream

  std::unique_ptr<Event> written = a->make_event();
  ASSERT_TRUE(a->record(*written).ok());
  ASSERT_TRUE(b->wait(*written).ok());  // b's stream waits; the host does not
  // Two halves, swapped: offsets on both sides are honoured.
  const size_t half = nbytes(*src.t) / 2;
  ASSERT_TRUE(b->copy_from(a.get(), *src.t, 0, *dst.t, half, half).ok());
  ASSERT_TRUE(b->copy_from(a.get(), *src.t, half, *dst.t, 0, half).ok());
  ASSERT_TRUE(b->synchronize().ok());

  std::vector<float> got(static_cast<size_t>(kN));
  b->get_tensor(*dst.t, got.data(), 0, nbytes(*dst.t));
  const size_t h = static_cast<size_t>(kN) / 2;
  EXPECT_EQ(std::memcmp(got.data(), want.data() + h, half), 0);
  EXPECT_EQ(std::memcmp(got.data() + h, want.data(), half), 0);
}

TEST(CudaCopy, CpuToCudaAndBackWithEvents) {
  GL_REQUIRE_GPU();
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  std::unique_ptr<Backend> gpu = cuda::make_backend();
  Placed host(*cpu, "host"), dev(*gpu, "dev"), back(*cpu, "back");
  const std::vector<float> want = random_floats(kN, 8);
  cpu->set_tensor(*host.t, want.data(), 0, nbytes(*host.t));

  std::unique_ptr<Event> cpu_done = cpu->make_event();
  ASSERT_TRUE(cpu->record(*cpu_done).ok());
  ASSERT_TRUE(gpu->wait(*cpu_done).ok());
  ASSERT_TRUE(gpu->copy_from(cpu.get(), *host.t, 0, *dev.t, 0, nbytes(*host.t)).ok());
  std::unique_ptr<Event> gpu_done = gpu->make_event();
  ASSERT_TRUE(gpu->record(*gpu_done).ok());
  ASSERT_TRUE(cpu->wait(*gpu_done).ok());  // the CPU waits on the host
  ASSERT_TRUE(cpu->copy_from(gpu.get(), *dev.t, 0, *back.t, 0, nbytes(*dev.t)).ok());
  EXPECT_EQ(std::memcmp(back.t->data, want.data(), nbytes(*back.t)), 0);
  EXPECT_TRUE(gpu->synchronize().ok());
}

// silu on the device, an F16 product declined to the CPU, an add back on the device: copies both
// ways in every run. Runs repeat bit for bit, and the device split is captured and replayed.
TEST(CudaCopy, FallbackCopiesRepeatExactlyWithReplays) {
  GL_REQUIRE_GPU();
  constexpr int64_t kIn = 64, kOut = 64, kRows = 3;
  test::RestrictedBackend gpu(cuda::make_backend(), {});
  gpu.declines = [](const Tensor& n) { return n.op == Op::MUL_MAT && n.src[0]->type == DType::F16; };
  Context c;
  Tensor* x = c.new_tensor(DType::F32, {kIn, kRows}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* w = c.new_tensor(DType::F16, {kIn, kOut}, "w16");
  w->flags |= TENSOR_WEIGHT;
  auto buf = gpu.alloc_buffer(nbytes(*w), BufferUsage::WEIGHTS);
  buf->bind(*w, 0);
  std::vector<fp16_t> h(static_cast<size_t>(kIn * kOut));
  const std::vector<float> f = random_floats(h.size(), 9);
  for (size_t i = 0; i < h.size(); ++i) h[i] = fp32_to_fp16(f[i]);
  gpu.set_tensor(*w, h.data(), 0, nbytes(*w));
  Tensor* act = set_name(silu(c, x), "act");
  Tensor* p = set_name(mul_mat(c, w, act), "p");
  Tensor* y = set_name(add(c, silu(c, p), p), "y");
  y->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({y});

  Executor ex({&gpu});
  ASSERT_TRUE(ex.allocate(g).ok());
  std::vector<float> first;
  for (int round = 0; round < 4; ++round) {
    ex.set_input(*x, random_floats(kIn * kRows, 10).data());
    const Status s = ex.compute(g);
    ASSERT_TRUE(s.ok()) << s.error();
    std::vector<float> out(static_cast<size_t>(nelements(*y)));
    ex.get_output(*y, out.data());
    if (round == 0) first = out;
    EXPECT_EQ(out, first) << "round " << round;
    EXPECT_GT(ex.n_copies(), 0);
  }
  EXPECT_GT(cuda::graph_stats(gpu.inner()).replays, 0);
}

}  // namespace
}  // namespace gl
