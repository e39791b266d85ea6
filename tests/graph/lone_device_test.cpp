// lone_device_test.cpp - a device backend asked for alone: the nodes it declines run on the CPU
// fallback that the scheduler adds itself, with the results of a plain CPU run.
//
// RestrictedBackend (tests/common) stands in for the device: it forwards to a CPU backend, owns
// its buffers, says is_host() false and declines one (op, dtype) pair, MUL_MAT with F16 weights.
// The same scheduler path runs with the real CUDA backend in tests/gpu.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::random_floats;
using test::RestrictedBackend;

constexpr int64_t kIn = 64, kOut = 48, kRows = 5;

bool declines_f16_matmul(const Tensor& n) { return n.op == Op::MUL_MAT && n.src[0]->type == DType::F16; }

// y = silu(w16 x) + w32 x: the F16 product is declined, everything else runs on the "device".
struct Model {
  Context ctx;
  Tensor *x, *w16, *w32, *y, *p16;
  std::unique_ptr<Buffer> weights;
};

void build(Model& m, Backend& owner) {
  Context& c = m.ctx;
  m.x = c.new_tensor(DType::F32, {kIn, kRows}, "x");
  m.x->flags |= TENSOR_INPUT;
  m.w16 = c.new_tensor(DType::F16, {kIn, kOut}, "w16");
  m.w32 = c.new_tensor(DType::F32, {kIn, kOut}, "w32");
  m.w16->flags |= TENSOR_WEIGHT;
  m.w32->flags |= TENSOR_WEIGHT;
  m.weights = owner.alloc_buffer(nbytes(*m.w16) + nbytes(*m.w32), BufferUsage::WEIGHTS);
  m.weights->bind(*m.w16, 0);
  m.weights->bind(*m.w32, nbytes(*m.w16));
  std::vector<fp16_t> h(static_cast<size_t>(kIn * kOut));
  const std::vector<float> f = random_floats(h.size(), 1);
  for (size_t i = 0; i < h.size(); ++i) h[i] = fp32_to_fp16(f[i]);
  owner.set_tensor(*m.w16, h.data(), 0, nbytes(*m.w16));
  owner.set_tensor(*m.w32, random_floats(h.size(), 2).data(), 0, nbytes(*m.w32));

  m.p16 = set_name(mul_mat(c, m.w16, m.x), "p16");
  m.y = set_name(add(c, silu(c, m.p16), mul_mat(c, m.w32, m.x)), "y");
  m.y->flags |= TENSOR_OUTPUT;
}

std::vector<float> run(Executor& ex, Model& m) {
  Graph g = Graph::build({m.y});
  Status s = ex.allocate(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.set_input(*m.x, random_floats(kIn * kRows, 3).data());
  s = ex.compute(g);
  EXPECT_TRUE(s.ok()) << s.error();
  std::vector<float> y(static_cast<size_t>(kOut * kRows));
  ex.get_output(*m.y, y.data());
  return y;
}

TEST(LoneDevice, DeclinedNodeRunsOnTheImplicitCpu) {
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({cpu.get()});
  Model mr;
  build(mr, *cpu);
  const std::vector<float> want = run(ref, mr);
  EXPECT_EQ(ref.scheduler().implicit_fallback(), nullptr);  // a host backend was given

  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false, 256);
  dev.declines = declines_f16_matmul;
  Executor ex({&dev});  // the device alone
  Model m;
  build(m, dev);
  const std::vector<float> got = run(ex, m);

  ASSERT_NE(ex.scheduler().implicit_fallback(), nullptr);
  ASSERT_EQ(ex.scheduler().backends().size(), 2u);
  EXPECT_EQ(ex.scheduler().backends()[1], ex.scheduler().implicit_fallback());
  EXPECT_EQ(m.p16->backend_id, 1);  // the declined product
  EXPECT_EQ(m.y->backend_id, 0);
  EXPECT_EQ(ex.scheduler().schedule(Graph::build({m.y})).n_fallback, 1);
  EXPECT_GT(ex.n_copies(), 0);  // x to the CPU, p16 back to the device
  EXPECT_EQ(got, want);
}

// Without a declined node the implicit CPU stays idle: no arena, no copies.
TEST(LoneDevice, SupportedGraphNeverTouchesTheCpu) {
  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false, 256);
  Executor ex({&dev});
  Model m;
  build(m, dev);
  run(ex, m);
  EXPECT_EQ(ex.n_copies(), 0);
  EXPECT_EQ(ex.arena(1), nullptr);
  EXPECT_EQ(ex.scheduler().schedule(Graph::build({m.y})).n_fallback, 0);
}

// The copies between the device and its CPU fallback are ordered by events: each consumer waits
// on an event recorded on the producer before its copy, with results as before.
TEST(LoneDevice, FallbackCopiesWaitOnEvents) {
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({cpu.get()});
  Model mr;
  build(mr, *cpu);
  const std::vector<float> want = run(ref, mr);

  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false, 256);
  dev.declines = declines_f16_matmul;
  std::vector<std::string> log;
  dev.log = &log;
  Executor ex({&dev});
  Model m;
  build(m, dev);
  EXPECT_EQ(run(ex, m), want);
  // CPU split (p16) first: it waits on the device's event on the host, then reads w16 and x;
  // the device split then waits once on the CPU's event (queued, not on the host) and copies
  // the two ranges the CPU holds before computing.
  const std::vector<std::string> want_log = {"record", "host_wait", "wait", "copy_from", "copy_from", "compute"};
  EXPECT_EQ(log, want_log);
}

// A device fault surfacing at the end-of-run synchronize comes back as a Status naming the last
// node the device ran; nothing aborts. One split: the hot path, where no event is recorded.
TEST(LoneDevice, FaultAtSynchronizeIsAStatusNamingTheNode) {
  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false, 256);
  std::vector<std::string> log;
  dev.log = &log;
  Executor ex({&dev});
  Model m;
  build(m, dev);
  Graph g = Graph::build({m.y});
  ASSERT_TRUE(ex.allocate(g).ok());
  ex.set_input(*m.x, random_floats(kIn * kRows, 3).data());
  dev.fault_after_compute = true;
  const Status s = ex.compute(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("after node 'y'"), std::string::npos) << s.error();
  EXPECT_EQ(log, std::vector<std::string>{"compute"});
}

// A CPU split reading what a faulted device split wrote stops at the event it waits on: the
// Status names the device's node and the CPU never computes on the bad data.
TEST(LoneDevice, FaultSeenByTheCpuConsumerNamesTheDeviceNode) {
  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false, 256);
  dev.declines = declines_f16_matmul;
  std::vector<std::string> log;
  dev.log = &log;
  Executor ex({&dev});
  Model m;
  build(m, dev);
  Tensor* act = set_name(silu(m.ctx, m.x), "act");        // on the device
  Tensor* z = set_name(mul_mat(m.ctx, m.w16, act), "z");  // declined: on the CPU
  Graph g = Graph::build({z});
  ASSERT_TRUE(ex.allocate(g).ok());
  ex.set_input(*m.x, random_floats(kIn * kRows, 3).data());
  dev.fault_after_compute = true;
  const Status s = ex.compute(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("after node 'act'"), std::string::npos) << s.error();
  EXPECT_EQ(log, (std::vector<std::string>{"compute", "record", "host_wait"}));
}

}  // namespace
}  // namespace gl
