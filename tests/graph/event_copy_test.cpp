// event_copy_test.cpp - copies between two device backends of one kind (the shape of two GPUs),
// ordered by events both ways: the consumer waits on the producer's event before copying, and
// the producer's later work waits on the consumer's, since it may reuse the memory copied from.
//
// Two RestrictedBackends stand in for the devices: both forward to CPU backends and say
// is_host() false; the first declines SILU and the second ADD, so the graph runs A, B, A.
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

constexpr int64_t kCols = 64, kRows = 5;

// y = silu(2 x) + 2 x
std::vector<float> run(Executor& ex) {
  Context c;
  Tensor* x = c.new_tensor(DType::F32, {kCols, kRows}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* a = set_name(scale(c, x, 2.0f), "a");
  Tensor* y = set_name(add(c, silu(c, a), a), "y");
  y->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({y});
  Status s = ex.allocate(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.set_input(*x, random_floats(kCols * kRows, 11).data());
  s = ex.compute(g);
  EXPECT_TRUE(s.ok()) << s.error();
  std::vector<float> out(static_cast<size_t>(kCols * kRows));
  ex.get_output(*y, out.data());
  return out;
}

TEST(EventCopy, TwoDevicesWaitOnEachOthersEvents) {
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 2});
  Executor ref({cpu.get()});
  const std::vector<float> want = run(ref);

  RestrictedBackend a(cpu::make_backend({.n_threads = 2}), {Op::SILU}, /*host=*/false, 256);
  RestrictedBackend b(cpu::make_backend({.n_threads = 2}), {Op::ADD}, /*host=*/false, 256);
  std::vector<std::string> log_a, log_b;
  a.log = &log_a;
  b.log = &log_b;
  Executor ex({&a, &b});
  EXPECT_EQ(run(ex), want);
  // Split B (silu): A records, B waits and copies a in, B records and A waits (A's release).
  // Split A (add): B records, A waits and copies silu(a) in, A records and B waits.
  EXPECT_EQ(log_a, (std::vector<std::string>{"compute", "record", "wait", "wait", "copy_from", "record", "compute"}));
  EXPECT_EQ(log_b, (std::vector<std::string>{"wait", "copy_from", "record", "compute", "record", "wait"}));
}

}  // namespace
}  // namespace gl
