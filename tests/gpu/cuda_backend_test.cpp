// cuda_backend_test.cpp - the CUDA backend's own contract (transfers, the caching pool, out of
// memory) and the executor's device paths on a real GPU: ops the GPU declines run on the CPU
// with staged copies both ways, and a CPU write into a GPU cache is copied back. Every test
// skips where no CUDA device is visible, so the binary also runs on the build machines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/cuda.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::random_floats;

#define GL_REQUIRE_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible"

// A tensor over a whole buffer, for transfers.
Tensor over(Buffer& b, size_t bytes) {
  Tensor t;
  t.ne = {static_cast<int64_t>(bytes / 4), 1, 1, 1};
  set_contiguous_strides(t);
  b.bind(t, 0);
  return t;
}

TEST(CudaBackend, SetAndGetWithOffsets) {
  GL_REQUIRE_GPU();
  auto be = cuda::make_backend();
  EXPECT_EQ(be->name(), "cuda");
  EXPECT_FALSE(be->is_host());
  auto buf = be->alloc_buffer(4096, BufferUsage::COMPUTE);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->base()) % be->alignment(), 0u);
  Tensor t = over(*buf, 4096);
  std::vector<unsigned char> in(4096), out(4096, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  be->set_tensor(t, in.data(), 0, 4096);
  be->set_tensor(t, in.data(), 1000, 24);  // bytes [1000, 1024) now repeat the first 24
  be->get_tensor(t, out.data(), 0, 4096);
  for (size_t i = 0; i < in.size(); ++i) {
    const unsigned char want = (i >= 1000 && i < 1024) ? in[i - 1000] : in[i];
    ASSERT_EQ(out[i], want) << "byte " << i;
  }
  std::vector<unsigned char> part(100);
  be->get_tensor(t, part.data(), 2000, 100);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), in.begin() + 2000));
}

TEST(CudaBackend, FreedBlocksAreReusedBySizeClass) {
  GL_REQUIRE_GPU();
  auto be = cuda::make_backend();
  auto a = be->alloc_buffer(100000, BufferUsage::COMPUTE);
  ASSERT_NE(a, nullptr);
  void* p = a->base();
  a.reset();
  auto b = be->alloc_buffer(100001, BufferUsage::COMPUTE);  // same size class
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->base(), p);
  EXPECT_EQ(b->size(), 100001u);
  auto c = be->alloc_buffer(100000, BufferUsage::COMPUTE);  // the cached block is taken
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->base(), p);
}

TEST(CudaBackend, OutOfMemoryIsANullBufferAndLeavesNoError) {
  GL_REQUIRE_GPU();
  auto be = cuda::make_backend();
  EXPECT_EQ(be->alloc_buffer(size_t{1} << 50, BufferUsage::COMPUTE), nullptr);  // a petabyte

  // The failed cudaMalloc must not be reported later as a launch error of some node.
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {64, 4}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* y = scale(ctx, x, 2.0f);
  Graph g = Graph::build({y});
  Executor ex({be.get()});
  ASSERT_TRUE(ex.allocate(g).ok());
  const std::vector<float> xs = random_floats(256, 1);
  ex.set_input(*x, xs.data());
  Status s = ex.compute(g);
  ASSERT_TRUE(s.ok()) << s.error();
  std::vector<float> out(256);
  ex.get_output(*y, out.data());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], 2.0f * xs[i]) << i;
}

TEST(CudaBackend, CopyTensorWithOffsets) {
  GL_REQUIRE_GPU();
  auto be = cuda::make_backend();
  auto buf = be->alloc_buffer(8192, BufferUsage::COMPUTE);
  ASSERT_NE(buf, nullptr);
  Tensor t = over(*buf, 8192);
  std::vector<unsigned char> in(8192), out(8192);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 1);
  be->set_tensor(t, in.data(), 0, in.size());
  be->copy_tensor(t, 100, t, 5000, 1000);  // queued behind the write, before the read
  be->get_tensor(t, out.data(), 0, out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char want = (i >= 5000 && i < 6000) ? in[i - 4900] : in[i];
    ASSERT_EQ(out[i], want) << "byte " << i;
  }
}

// Many queued writes through the pinned ring (more than it holds, so it must wait and wrap),
// each from a host buffer reused right after set_tensor returns.
TEST(CudaBackend, QueuedWritesSurviveTheStagingRingWrapping) {
  GL_REQUIRE_GPU();
  auto be = cuda::make_backend();
  constexpr size_t kBytes = size_t{6} << 20;  // under a quarter of the ring: staged, not direct
  constexpr int kBuffers = 24;                // 144 MB in all: the ring wraps at least twice
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Tensor> ts;
  std::vector<float> host(kBytes / 4);
  for (int b = 0; b < kBuffers; ++b) {
    bufs.push_back(be->alloc_buffer(kBytes, BufferUsage::COMPUTE));
    ASSERT_NE(bufs.back(), nullptr);
    ts.push_back(over(*bufs.back(), kBytes));
  }
  for (int b = 0; b < kBuffers; ++b) {
    std::fill(host.begin(), host.end(), static_cast<float>(b + 1));
    be->set_tensor(ts[static_cast<size_t>(b)], host.data(), 0, kBytes);
  }
  for (int b = 0; b < kBuffers; ++b) {
    be->get_tensor(ts[static_cast<size_t>(b)], host.data(), 0, kBytes);
    ASSERT_EQ(host.front(), static_cast<float>(b + 1)) << "buffer " << b;
    ASSERT_EQ(host.back(), static_cast<float>(b + 1)) << "buffer " << b;
  }
}

// A small model-like block: norm x weight (a fused pair on CUDA), a GEMV, a residual.
struct GraphRun {
  Context c;
  Tensor* x = nullptr;
  Tensor* y = nullptr;
  Graph g;
  GraphRun(Tensor* w_norm, Tensor* w_mat) {
    x = c.new_tensor(DType::F32, {256, 2}, "x");
    x->flags |= TENSOR_INPUT;
    Tensor* h = mul(c, rms_norm(c, x, 1e-6f), w_norm);
    y = add(c, silu(c, mul_mat(c, w_mat, h)), x);
    g = Graph::build({y});
  }
  std::vector<float> run(Executor& ex, const std::vector<float>& xs) {
    EXPECT_TRUE(ex.allocate(g).ok());
    ex.set_input(*x, xs.data());
    Status s = ex.compute(g);
    EXPECT_TRUE(s.ok()) << s.error();
    std::vector<float> out(512);
    ex.get_output(*y, out.data());
    return out;
  }
};

struct Weights {
  Context c;
  std::unique_ptr<Buffer> buf;
  Tensor* norm = nullptr;
  Tensor* mat = nullptr;
  Weights(Backend& be, uint32_t seed) {
    norm = c.new_tensor(DType::F32, {256}, "w_norm");
    mat = c.new_tensor(DType::F32, {256, 256}, "w_mat");
    buf = be.alloc_buffer(nbytes(*norm) + nbytes(*mat), BufferUsage::WEIGHTS);
    buf->bind(*norm, 0);
    buf->bind(*mat, nbytes(*norm));
    be.set_tensor(*norm, random_floats(256, seed).data(), 0, nbytes(*norm));
    be.set_tensor(*mat, random_floats(256 * 256, seed + 1).data(), 0, nbytes(*mat));
  }
};

// Replays of a captured step give exactly what eager launches give, for new input data each
// time; a graph over other weights (other pointers, same shapes) is not served a stale replay.
TEST(CudaGraphs, ReplaysMatchEagerLaunchesAndFollowNewPointers) {
  GL_REQUIRE_GPU();
  auto captured = cuda::make_backend({.graphs = true});
  auto eager = cuda::make_backend({.graphs = false});
  Weights wc(*captured, 10), we(*eager, 10);
  GraphRun rc(wc.norm, wc.mat), re(we.norm, we.mat);
  Executor exc({captured.get()}), exe({eager.get()});
  for (int r = 0; r < 5; ++r) {
    const std::vector<float> xs = random_floats(512, 100 + static_cast<uint32_t>(r));
    EXPECT_EQ(rc.run(exc, xs), re.run(exe, xs)) << "run " << r;
  }
  const cuda::GraphStats st = cuda::graph_stats(*captured);
  if (!diag_env(Diag::CUDA_GRAPHS_OFF)) {
    EXPECT_EQ(st.captures, 1);  // run 0 eager, run 1 captured, runs 2..4 replayed
    EXPECT_EQ(st.replays, 3);
  }
  EXPECT_EQ(cuda::graph_stats(*eager).captures, 0);

  Weights wc2(*captured, 20), we2(*eager, 20);
  GraphRun rc2(wc2.norm, wc2.mat), re2(we2.norm, we2.mat);
  for (int r = 0; r < 3; ++r) {
    const std::vector<float> xs = random_floats(512, 200 + static_cast<uint32_t>(r));
    EXPECT_EQ(rc2.run(exc, xs), re2.run(exe, xs)) << "other weights, run " << r;
  }
}

// While paused (bench's untimed context fill), a CUDA backend runs a repeated step eagerly and
// leaves its graphs alone: the graph captured before the pause is replayed after it.
TEST(CudaGraphs, PausedCaptureRunsEagerlyAndKeepsTheGraphs) {
  GL_REQUIRE_GPU();
  if (diag_env(Diag::CUDA_GRAPHS_OFF)) GTEST_SKIP() << "GL_CUDA_GRAPHS=0";
  auto gpu = cuda::make_backend({.graphs = true});
  Weights w(*gpu, 30);
  GraphRun run(w.norm, w.mat);
  Executor ex({gpu.get()});
  const std::vector<float> xs = random_floats(512, 300);
  const std::vector<float> first = run.run(ex, xs);  // eager
  EXPECT_EQ(run.run(ex, xs), first);                 // captured
  cuda::pause_graph_capture(*gpu, true);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(run.run(ex, xs), first) << "paused, run " << r;
  EXPECT_EQ(cuda::graph_stats(*gpu).captures, 1);
  EXPECT_EQ(cuda::graph_stats(*gpu).replays, 0);
  cuda::pause_graph_capture(*gpu, false);
  EXPECT_EQ(run.run(ex, xs), first);
  EXPECT_EQ(cuda::graph_stats(*gpu).captures, 1);
  EXPECT_EQ(cuda::graph_stats(*gpu).replays, 1);
}

using Restricted = test::RestrictedBackend;

constexpr int64_t kCols = 96, kRows = 6, kCacheRows = 10;
const std::vector<int32_t> kIds = {7, 2, 9, 0, 4, 5};

struct Outputs {
  std::vector<float> y, summed, scaled, cache;
};

// norm -> weight -> silu -> gate -> residual, then SET_ROWS into a cache, a read of the written
// cache in the same split (sum_rows) and one on the GPU (scale). Weights and cache live on owner.
Outputs run_block(Executor& ex, Backend& owner) {
  Context c;
  Tensor* x = c.new_tensor(DType::F32, {kCols, kRows}, "x");
  Tensor* ids = c.new_tensor(DType::I32, {kRows}, "ids");
  x->flags |= TENSOR_INPUT;
  ids->flags |= TENSOR_INPUT;
  Tensor* w = c.new_tensor(DType::F32, {kCols}, "w");
  Tensor* cache = c.new_tensor(DType::F32, {kCols, kCacheRows}, "cache");
  w->flags |= TENSOR_WEIGHT;
  cache->flags |= TENSOR_WEIGHT;
  auto weights = owner.alloc_buffer(nbytes(*w) + nbytes(*cache), BufferUsage::WEIGHTS);
  weights->bind(*w, 0);
  weights->bind(*cache, nbytes(*w));
  owner.set_tensor(*w, random_floats(kCols, 1).data(), 0, nbytes(*w));
  owner.set_tensor(*cache, random_floats(kCols * kCacheRows, 2).data(), 0, nbytes(*cache));

  Tensor* h = mul(c, rms_norm(c, x, 1e-6f), w);
  Tensor* y = add(c, mul(c, silu(c, h), h), x);
  Tensor* written = set_rows(c, cache, y, ids);
  Tensor* summed = sum_rows(c, written);
  Tensor* scaled = scale(c, written, 0.5f);
  Graph g = Graph::build({y, summed, scaled});

  Outputs o{std::vector<float>(kCols * kRows), std::vector<float>(kCacheRows), std::vector<float>(kCols * kCacheRows),
            std::vector<float>(kCols * kCacheRows)};
  Status s = ex.allocate(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.set_input(*x, random_floats(kCols * kRows, 3).data());
  ex.set_input(*ids, kIds.data());
  s = ex.compute(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.get_output(*y, o.y.data());
  ex.get_output(*summed, o.summed.data());
  ex.get_output(*scaled, o.scaled.data());
  owner.get_tensor(*cache, o.cache.data(), 0, nbytes(*cache));
  return o;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // GPU reductions sum in another order than the CPU's: allow float rounding.
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << what << "[" << i << "]";
  }
}

TEST(CudaExecutor, CpuFallbackWithStagedCopiesMatchesCpu) {
  GL_REQUIRE_GPU();
  std::unique_ptr<Backend> ref_cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({ref_cpu.get()});
  const Outputs want = run_block(ref, *ref_cpu);

  Restricted gpu(cuda::make_backend(), {Op::SILU, Op::SET_ROWS, Op::SUM_ROWS});
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ex({&gpu, cpu.get()});
  for (int round = 0; round < 2; ++round) {  // the second round replays cached plans
    const Outputs got = run_block(ex, gpu);
    // h to the CPU for silu and back, y and the cache range for set_rows, the cache written back.
    EXPECT_GE(ex.n_copies(), 5);
    expect_close(got.y, want.y, "y");
    expect_close(got.summed, want.summed, "summed");
    expect_close(got.scaled, want.scaled, "scaled");
    expect_close(got.cache, want.cache, "cache");
  }
}

}  // namespace
}  // namespace gl
