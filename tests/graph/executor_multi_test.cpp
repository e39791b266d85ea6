// executor_multi_test.cpp - two real CPU backends, one restricted: the fallback, staging copies
// and write-back paths give exactly the single-backend results.
//
// RestrictedBackend (tests/common) forwards to a CPU backend but declares some ops unsupported,
// owns its buffers, and can pretend to be a device backend (is_host() false, alignment 256 as a
// GPU would), which makes the executor copy everything it shares.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::random_floats;
using test::RestrictedBackend;

// A norm -> weight -> silu -> gate -> residual block, plus a SET_ROWS into a cache and reads
// of the written cache: on the same split as the write (sum_rows) and on the next (scale).
struct Model {
  Context ctx;
  Tensor *x, *ids, *w, *cache, *y, *written, *summed, *scaled;
  std::unique_ptr<Buffer> weights;
};

constexpr int64_t kCols = 96, kRows = 6, kCacheRows = 10;
const std::vector<int32_t> kIds = {7, 2, 9, 0, 4, 5};

void build(Model& m, Backend& owner) {
  Context& c = m.ctx;
  m.x = c.new_tensor(DType::F32, {kCols, kRows}, "x");
  m.x->flags |= TENSOR_INPUT;
  m.ids = c.new_tensor(DType::I32, {kRows}, "ids");
  m.ids->flags |= TENSOR_INPUT;
  m.w = c.new_tensor(DType::F32, {kCols}, "w");
  m.cache = c.new_tensor(DType::F32, {kCols, kCacheRows}, "cache");
  m.w->flags |= TENSOR_WEIGHT;
  m.cache->flags |= TENSOR_WEIGHT;
  m.weights = owner.alloc_buffer(nbytes(*m.w) + nbytes(*m.cache), BufferUsage::WEIGHTS);
  m.weights->bind(*m.w, 0);
  m.weights->bind(*m.cache, nbytes(*m.w));
  owner.set_tensor(*m.w, random_floats(kCols, 1).data(), 0, nbytes(*m.w));
  owner.set_tensor(*m.cache, random_floats(kCols * kCacheRows, 2).data(), 0, nbytes(*m.cache));

  Tensor* h = set_name(mul(c, rms_norm(c, m.x, 1e-6f), m.w), "h");
  Tensor* s = set_name(silu(c, h), "s");
  m.y = set_name(add(c, mul(c, s, h), m.x), "y");
  m.written = set_name(set_rows(c, m.cache, m.y, m.ids), "written");
  m.summed = set_name(sum_rows(c, m.written), "summed");
  m.scaled = set_name(scale(c, m.written, 0.5f), "scaled");
}

struct Outputs {
  std::vector<float> y, summed, scaled, cache;
  bool operator==(const Outputs&) const = default;
};

Outputs run(Executor& ex, Model& m, Backend& owner) {
  Graph g = Graph::build({m.y, m.summed, m.scaled});
  EXPECT_TRUE(g.verify().ok()) << g.verify().error();
  Status s = ex.allocate(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.set_input(*m.x, random_floats(kCols * kRows, 3).data());
  ex.set_input(*m.ids, kIds.data());
  s = ex.compute(g);
  EXPECT_TRUE(s.ok()) << s.error();
  Outputs o{std::vector<float>(kCols * kRows), std::vector<float>(kCacheRows), std::vector<float>(kCols * kCacheRows),
            std::vector<float>(kCols * kCacheRows)};
  ex.get_output(*m.y, o.y.data());
  ex.get_output(*m.summed, o.summed.data());
  ex.get_output(*m.scaled, o.scaled.data());
  owner.get_tensor(*m.cache, o.cache.data(), 0, nbytes(*m.cache));
  return o;
}

Outputs single_backend_reference() {
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ex({cpu.get()});
  Model m;
  build(m, *cpu);
  return run(ex, m, *cpu);
}

class ExecutorMulti : public testing::TestWithParam<bool> {};

// SILU, SET_ROWS and SUM_ROWS fall back to the CPU backend; the weights and the cache live
// in the restricted backend's buffer.
TEST_P(ExecutorMulti, FallbackMatchesSingleBackend) {
  const bool host = GetParam();
  RestrictedBackend a(cpu::make_backend({.n_threads = 2}), {Op::SILU, Op::SET_ROWS, Op::SUM_ROWS}, host, 256);
  std::unique_ptr<Backend> b = cpu::make_backend({.n_threads = 2});
  Executor ex({&a, b.get()});
  Model m;
  build(m, a);
  const Outputs want = single_backend_reference();
  a.n_transfers = 0;
  const Outputs got = run(ex, m, a);

  EXPECT_EQ(ex.scheduler().schedule(Graph::build({m.y, m.summed, m.scaled})).n_fallback, 3);
  EXPECT_EQ(m.written->backend_id, 1);
  EXPECT_EQ(m.summed->backend_id, 1);
  EXPECT_EQ(m.scaled->backend_id, 0);
  EXPECT_NE(ex.arena(0), nullptr);
  EXPECT_NE(ex.arena(1), nullptr);
  EXPECT_TRUE(got.y == want.y);
  EXPECT_TRUE(got.summed == want.summed);
  EXPECT_TRUE(got.scaled == want.scaled);
  EXPECT_TRUE(got.cache == want.cache);
  if (host) {
    EXPECT_EQ(ex.n_copies(), 0);  // host backends share memory
  } else {
    // In: h for silu; s back; y and the cache range for set_rows; written back: the cache.
    EXPECT_EQ(ex.n_copies(), 5);
    EXPECT_GE(a.n_transfers, 5);
  }
  // The graph is restored after each split: sources and data point at the real tensors.
  EXPECT_EQ(m.written->src[0], m.cache);
  EXPECT_EQ(m.written->data, m.cache->data);
}

TEST_P(ExecutorMulti, RepeatedComputeOnAReallocatedGraph) {
  RestrictedBackend a(cpu::make_backend({.n_threads = 2}), {Op::SILU, Op::SET_ROWS, Op::SUM_ROWS}, GetParam(), 256);
  std::unique_ptr<Backend> b = cpu::make_backend({.n_threads = 2});
  Executor ex({&a, b.get()});
  const Outputs want = single_backend_reference();
  for (int i = 0; i < 2; ++i) {  // a rebuilt graph reuses the plans and arenas
    Model m;
    build(m, a);
    EXPECT_TRUE(run(ex, m, a) == want) << "round " << i;
  }
  EXPECT_EQ(ex.scheduler().n_planned(), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecutorMulti, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "Host" : "PretendDevice"; });

}  // namespace
}  // namespace gl
