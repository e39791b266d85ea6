// cuda_workspace_test.cpp - kernels take their scratch from the planner's arena
// (Backend::workspace_size), never from an allocator of their own: a step with the cuBLAS
// prefill path (activation conversion, dequantized weight tiles), a segmented argmax and a top_k
// runs again and again, eagerly, captured and replayed, with no new device allocation and nothing
// taken from CUDA's stream-ordered allocator. Skips where no CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/cuda.h"
#include "ggml-lite/dtype.h"
#include "ggml-lite/executor.h"

namespace gl {
namespace {

using test::random_floats;

#define GL_REQUIRE_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible"

constexpr int64_t kEmbd = 256, kOut = 96, kRows = 48;  // > 8 rows: the cuBLAS path
constexpr int64_t kVocab = 20000, kLogitRows = 3;      // >= 4 x 4096: argmax splits rows in segments
constexpr int kTopK = 8;

// The stream-ordered allocator's high-water marks on device 0 (its default pool, and graph
// allocation nodes), which any cudaMallocAsync in a kernel would raise.
uint64_t stream_ordered_high() {
  cudaMemPool_t pool = nullptr;
  uint64_t pool_high = 0, graph_high = 0;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &pool_high), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &graph_high), cudaSuccess);
  return pool_high + graph_high;
}

void reset_stream_ordered_high() {
  cudaMemPool_t pool = nullptr;
  uint64_t zero = 0;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), cudaSuccess);
  ASSERT_EQ(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero), cudaSuccess);
}

// Weights in their storage type, made once from floats so both backends see the same bytes.
std::vector<unsigned char> stored(DType t, const std::vector<float>& v) {
  std::vector<unsigned char> bytes(row_bytes(t, static_cast<int64_t>(v.size())));
  from_float(t, v.data(), bytes.data(), static_cast<int64_t>(v.size()));
  return bytes;
}

struct Outputs {
  std::vector<float> y_bf16, y_q8;
  std::vector<int32_t> argmax, top_k;
};

// F32 activations x BF16 and Q8_0 weights (one GEMM of each kind), argmax and top_k over long rows.
struct PrefillStep {
  Context c;
  Tensor *x, *w_bf16, *w_q8, *logits;
  Tensor *y_bf16, *y_q8, *am, *tk;
  Graph g;
  PrefillStep() {
    x = c.new_tensor(DType::F32, {kEmbd, kRows}, "x");
    w_bf16 = c.new_tensor(DType::BF16, {kEmbd, kOut}, "w_bf16");
    w_q8 = c.new_tensor(DType::Q8_0, {kEmbd, kOut}, "w_q8");
    logits = c.new_tensor(DType::F32, {kVocab, kLogitRows}, "logits");
    for (Tensor* t : {x, w_bf16, w_q8, logits}) t->flags |= TENSOR_INPUT;
    y_bf16 = set_name(mul_mat(c, w_bf16, x), "y_bf16");
    y_q8 = set_name(mul_mat(c, w_q8, x), "y_q8");
    am = set_name(argmax(c, logits), "argmax");
    tk = set_name(top_k(c, logits, kTopK), "top_k");
    for (Tensor* t : {y_bf16, y_q8, am, tk}) t->flags |= TENSOR_OUTPUT;
    g = Graph::build({y_bf16, y_q8, am, tk});
  }

  Outputs run(Executor& ex, uint32_t seed) {
    EXPECT_TRUE(ex.allocate(g).ok());
    ex.set_input(*x, random_floats(kEmbd * kRows, seed).data());
    ex.set_input(*w_bf16, stored(DType::BF16, random_floats(kEmbd * kOut, 7)).data());
    ex.set_input(*w_q8, stored(DType::Q8_0, random_floats(kEmbd * kOut, 8)).data());
    ex.set_input(*logits, random_floats(kVocab * kLogitRows, seed + 1).data());
    const Status s = ex.compute(g);
    EXPECT_TRUE(s.ok()) << s.error();
    Outputs o{std::vector<float>(kOut * kRows), std::vector<float>(kOut * kRows), std::vector<int32_t>(kLogitRows),
              std::vector<int32_t>(kTopK * kLogitRows)};
    ex.get_output(*y_bf16, o.y_bf16.data());
    ex.get_output(*y_q8, o.y_q8.data());
    ex.get_output(*am, o.argmax.data());
    ex.get_output(*tk, o.top_k.data());
    return o;
  }
};

// The op harness checks these products closely (tests/ops); here they only have to be the
// products: NMSE against the CPU within the activation rounding (BF16 ~2e-6, Q8_0 ~1.4e-5).
double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    ref += double(want[i]) * want[i];
  }
  return got.size() == want.size() && ref > 0.0 ? err / ref : 1.0;
}

TEST(CudaWorkspace, RepeatedPrefillStepAllocatesNoDeviceMemory) {
  GL_REQUIRE_GPU();
  auto gpu = cuda::make_backend();
  auto cpu = cpu::make_backend({.n_threads = 2});
  PrefillStep sg, sc;
  Executor ex({gpu.get()}), ref({cpu.get()});
  reset_stream_ordered_high();

  // Run 0 eager (allocates the arena), run 1 captured, runs 2.. replayed; new data every run.
  cuda::PoolStats after_first{};
  for (uint32_t r = 0; r < 5; ++r) {
    const Outputs got = sg.run(ex, 100 + 10 * r), want = sc.run(ref, 100 + 10 * r);
    EXPECT_EQ(got.argmax, want.argmax) << "run " << r;
    EXPECT_EQ(got.top_k, want.top_k) << "run " << r;
    EXPECT_LT(nmse(got.y_bf16, want.y_bf16), 2e-5) << "run " << r;
    EXPECT_LT(nmse(got.y_q8, want.y_q8), 1e-4) << "run " << r;
    if (r == 0) after_first = cuda::pool_stats(*gpu);
  }
  // The planner reserved the scratch the paths declare, in the arena.
  EXPECT_NE(sg.y_bf16->workspace, nullptr);
  EXPECT_NE(sg.y_q8->workspace, nullptr);
  EXPECT_NE(sg.am->workspace, nullptr);

  const cuda::PoolStats now = cuda::pool_stats(*gpu);
  EXPECT_GT(after_first.mallocs, 0);  // the arena
  EXPECT_EQ(now.mallocs, after_first.mallocs);
  EXPECT_EQ(now.malloc_bytes, after_first.malloc_bytes);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(stream_ordered_high(), 0u) << "a kernel allocated through cudaMallocAsync";
}

}  // namespace
}  // namespace gl
