// vulkan_backend_test.cpp - the Vulkan backend's own contract: transfers (mapped and through the
// staging buffer), device copies, events, the error for a missing device, and the executor
// running a graph whose unsupported node (MUL_MAT) falls back to the CPU. Skips where the
// loader reports no Vulkan device; on the build machines it runs on lavapipe.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/vulkan.h"

namespace gl {
namespace {

#define GL_REQUIRE_VULKAN() \
  if (vulkan::devices().empty()) GTEST_SKIP() << "no Vulkan device"

std::unique_ptr<Backend> make(bool force_staging) {
  Result<std::unique_ptr<Backend>> be = vulkan::make_backend({.force_staging = force_staging});
  EXPECT_TRUE(be.ok()) << be.error();
  return be.ok() ? std::move(*be) : nullptr;
}

// A tensor over a whole buffer, for transfers.
Tensor over(Buffer& b, size_t bytes) {
  Tensor t;
  t.ne = {static_cast<int64_t>(bytes / 4), 1, 1, 1};
  set_contiguous_strides(t);
  b.bind(t, 0);
  return t;
}

class VulkanTransfer : public ::testing::TestWithParam<bool> {};

TEST_P(VulkanTransfer, SetGetAndCopyWithOffsets) {
  GL_REQUIRE_VULKAN();
  auto be = make(GetParam());
  ASSERT_NE(be, nullptr);
  EXPECT_EQ(be->name(), "vulkan");
  EXPECT_FALSE(be->is_host());
  auto buf = be->alloc_buffer(8192, BufferUsage::COMPUTE);
  ASSERT_NE(buf, nullptr);
  Tensor t = over(*buf, 8192);
  std::vector<unsigned char> in(4096), out(4096, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  be->set_tensor(t, in.data(), 0, 4096);
  be->set_tensor(t, in.data(), 1000, 24);  // bytes [1000, 1024) now repeat the first 24
  be->copy_tensor(t, 0, t, 4096, 4096);    // device to device, into the second half
  be->get_tensor(t, out.data(), 4096, 4096);
  for (size_t i = 0; i < in.size(); ++i) {
    const unsigned char want = (i >= 1000 && i < 1024) ? in[i - 1000] : in[i];
    ASSERT_EQ(out[i], want) << "byte " << i;
  }
  std::unique_ptr<Event> e = be->make_event();
  ASSERT_TRUE(be->record(*e).ok());
  EXPECT_TRUE(e->host_wait().ok());
  EXPECT_TRUE(be->synchronize().ok());
}

INSTANTIATE_TEST_SUITE_P(, VulkanTransfer, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "staging" : "mapped"; });

TEST(VulkanBackend, NoSuchDeviceIsAnError) {
  Result<std::unique_ptr<Backend>> be = vulkan::make_backend({.device = 1000});
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.error().find("vulkan"), std::string::npos) << be.error();
  EXPECT_NE(be.error().find("device"), std::string::npos) << be.error();
}

TEST(VulkanBackend, DeclinesWhatItHasNoShaderFor) {
  GL_REQUIRE_VULKAN();
  auto be = make(false);
  ASSERT_NE(be, nullptr);
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {8, 2}, "x");
  Tensor* ids = ctx.new_tensor(DType::I32, {2}, "ids");
  EXPECT_TRUE(be->supports(*get_rows(ctx, ctx.new_tensor(DType::Q8_0, {64, 4}, "q8"), ids)));
  EXPECT_TRUE(be->supports(*get_rows(ctx, ctx.new_tensor(DType::Q4_K, {256, 4}, "q4k"), ids)));
  // MXFP4's 17-byte blocks do not fall on the 16-bit words the shaders read.
  EXPECT_FALSE(be->supports(*get_rows(ctx, ctx.new_tensor(DType::MXFP4, {256, 4}, "mxfp4"), ids)));
  EXPECT_FALSE(be->supports(
      *mul_mat(ctx, ctx.new_tensor(DType::MXFP4, {256, 4}, "w4"), ctx.new_tensor(DType::F32, {256, 2}, "x2"))));
  Tensor* q8 = ctx.new_tensor(DType::Q8_0, {64, 4}, "cache");
  EXPECT_FALSE(be->supports(*cpy(ctx, ctx.new_tensor(DType::F32, {64, 4}, "src"), q8)));
  EXPECT_TRUE(be->supports(*add(ctx, x, x)));
}

// rms_norm(x) on Vulkan, a product with MXFP4 weights on the CPU (declined), then a Vulkan add: the
// executor copies across both ways; the result matches the CPU backend alone.
TEST(VulkanBackend, DeclinedNodeRunsOnTheCpu) {
  GL_REQUIRE_VULKAN();
  auto run = [](Backend& be) {
    Context ctx;
    Tensor* x = ctx.new_tensor(DType::F32, {256, 3}, "x");
    Tensor* w = ctx.new_tensor(DType::MXFP4, {256, 5}, "w");
    x->flags |= TENSOR_INPUT;
    w->flags |= TENSOR_INPUT;
    Tensor* h = mul_mat(ctx, w, rms_norm(ctx, x, 1e-6f));  // [5, 3]
    Tensor* y = add(ctx, h, h);
    y->flags |= TENSOR_OUTPUT;
    Graph g = Graph::build({y});
    Executor ex({&be});
    std::vector<float> xs(256 * 3), ws(256 * 5), out(15, 0.0f);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<float>(i));
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(static_cast<float>(i) * 0.3f);
    std::vector<unsigned char> wq(nbytes(*w));
    from_float(DType::MXFP4, ws.data(), wq.data(), static_cast<int64_t>(ws.size()));
    EXPECT_TRUE(ex.allocate(g).ok());
    ex.set_input(*x, xs.data());
    ex.set_input(*w, wq.data());
    const Status s = ex.compute(g);
    EXPECT_TRUE(s.ok()) << s.error();
    ex.get_output(*y, out.data());
    return out;
  };
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  auto cpu = cpu::make_backend({.n_threads = 1});
  const std::vector<float> got = run(*vk), want = run(*cpu);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << i;
}

// Runs of elementwise nodes that the backend records as one dispatch (elementwise_chain) or must
// not: the GDN gate (add -> softplus -> mul, its first output also a graph output), a step whose
// other operand is an earlier step's result (sigmoid(a) * a: the chain would read it before it is
// written), and a chain value as the second operand of SUB. Against the CPU.
TEST(VulkanBackend, ElementwiseChainsMatchTheCpu) {
  GL_REQUIRE_VULKAN();
  auto run = [](Backend& be) {
    Context ctx;
    std::vector<Tensor*> in;
    for (const char* name : {"x", "b", "c", "z", "w"}) {
      in.push_back(ctx.new_tensor(DType::F32, {64, 3}, name));
      in.back()->flags |= TENSOR_INPUT;
    }
    Tensor *x = in[0], *b = in[1], *c = in[2], *z = in[3], *w = in[4];
    Tensor* t = add(ctx, x, b);
    Tensor* gate = mul(ctx, softplus(ctx, t), c);
    Tensor* a = add(ctx, x, c);
    Tensor* self = mul(ctx, sigmoid(ctx, a), a);
    Tensor* minus = sub(ctx, w, silu(ctx, z));
    std::vector<Tensor*> outs{t, gate, self, minus};
    for (Tensor* o : outs) o->flags |= TENSOR_OUTPUT;
    Graph g = Graph::build(outs);
    Executor ex({&be});
    EXPECT_TRUE(ex.allocate(g).ok());
    for (size_t k = 0; k < in.size(); ++k) {
      std::vector<float> v(64 * 3);
      for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i * (k + 2)) * 0.05f) * 3.0f;
      ex.set_input(*in[k], v.data());
    }
    const Status st = ex.compute(g);
    EXPECT_TRUE(st.ok()) << st.error();
    std::vector<float> all;
    for (Tensor* o : outs) {
      std::vector<float> v(64 * 3);
      ex.get_output(*o, v.data());
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  auto cpu = cpu::make_backend({.n_threads = 1});
  const std::vector<float> got = run(*vk), want = run(*cpu);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << i;
}

// w [k, n] (BF16, from ws) times x [k, m] on be.
std::vector<float> bf16_product(Backend& be, const std::vector<float>& ws, const std::vector<float>& xs, int64_t k,
                                int64_t n, int64_t m) {
  Context ctx;
  Tensor* w = ctx.new_tensor(DType::BF16, {k, n}, "w");
  Tensor* x = ctx.new_tensor(DType::F32, {k, m}, "x");
  w->flags |= TENSOR_INPUT;
  x->flags |= TENSOR_INPUT;
  Tensor* y = mul_mat(ctx, w, x);
  y->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({y});
  Executor ex({&be});
  std::vector<bf16_t> wb(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) wb[i] = fp32_to_bf16(ws[i]);
  std::vector<float> out(static_cast<size_t>(n * m), 0.0f);
  EXPECT_TRUE(ex.allocate(g).ok());
  ex.set_input(*w, wb.data());
  ex.set_input(*x, xs.data());
  const Status s = ex.compute(g);
  EXPECT_TRUE(s.ok()) << s.error();
  ex.get_output(*y, out.data());
  return out;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    ref += double{want[i]} * want[i];
  }
  return err / ref;
}

// Activations that pick one k each (x[k, m] = 1 where k = m % K): out[n, m] is the weight w[m % K, n]
// exactly. Returns the wrong outputs, the first few named (n, m and the k a tile mixed up).
int wrong_picks(Backend& be, std::string_view what) {
  constexpr int64_t k = 96, n = 136, m = 200;
  std::vector<float> ws(k * n), xs(k * m, 0.0f);
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = static_cast<float>(static_cast<int>(i % 251) - 125) / 64.0f;
  for (int64_t r = 0; r < m; ++r) xs[static_cast<size_t>(r * k + r % k)] = 1.0f;
  const std::vector<float> got = bf16_product(be, ws, xs, k, n, m);
  int wrong = 0;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const float want = ws[static_cast<size_t>(c * k + r % k)], g = got[static_cast<size_t>(r * n + c)];
      if (g != want && ++wrong <= 12)
        ADD_FAILURE() << what << ": n " << c << ", m " << r << " (k " << r % k << "): got " << g << ", want " << want;
    }
  return wrong;
}

// The prefill product tests' shape (k is not a multiple of any shader's k slab: 32 for gemm.comp,
// 48 and 64 for gemm_coop.comp; n and m are not multiples of the output tiles) and operands:
// smooth weights [k, n] and activations [k, m].
constexpr int64_t kProductK = 328, kProductN = 150, kProductM = 200;

std::pair<std::vector<float>, std::vector<float>> product_inputs() {
  std::vector<float> ws(kProductK * kProductN), xs(kProductK * kProductM);
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(static_cast<float>(i) * 0.37f);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<float>(i) * 0.11f);
  return {ws, xs};
}

// A prefill product (more rows than the GEMV takes) on the f32 tiled shader (the default): within
// f32 rounding of the CPU; k is not a multiple of the 32-wide k slab and n, m are not multiples of
// the output tiles; one-hot activations pick every k exactly.
TEST(VulkanBackend, PrefillProduct) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t k = kProductK, n = kProductN, m = kProductM;
  const auto [ws, xs] = product_inputs();
  auto cpu = cpu::make_backend({.n_threads = 1});
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  EXPECT_LT(nmse(bf16_product(*vk, ws, xs, k, n, m), bf16_product(*cpu, ws, xs, k, n, m)), 1e-9);
  EXPECT_EQ(wrong_picks(*vk, "f32 tiles"), 0);
}

// The same on tensor cores (Options::cooperative_matrix, on by default), where the device offers
// VK_NV_cooperative_matrix (elsewhere this runs the f32 shader again): with the activations split
// into two f16 halves (EXACT) within f32 rounding, as the f32 shader; FAST (x rounded to f16) within
// the rounding of x to BF16 that the op harness allows a device for BF16 weights; activations past
// f16's range (|x| > 65504) send their tile to an f32 loop. On the H100 this caught two faults of
// NVIDIA's driver (580.159) that lavapipe cannot show (gemm_coop.comp's comments).
TEST(VulkanBackend, PrefillProductOnTensorCores) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t k = kProductK, n = kProductN, m = kProductM;
  const auto [ws, xs] = product_inputs();
  auto cpu = cpu::make_backend({.n_threads = 1});
  const std::vector<float> want = bf16_product(*cpu, ws, xs, k, n, m);
  std::vector<float> big = xs;
  big[5] = 1e5f;             // the first 128-row tile
  big[k * 160 + 7] = -3e6f;  // the second
  const std::vector<float> want_big = bf16_product(*cpu, ws, big, k, n, m);
  struct Config {
    Precision precision;
    uint32_t tile;
    double bound;
  };
  for (const Config c :
       {Config{Precision::EXACT, 64, 1e-9}, Config{Precision::EXACT, 128, 1e-9}, Config{Precision::FAST, 128, 2e-5}}) {
    auto vk = vulkan::make_backend({.cooperative_matrix = true, .precision = c.precision, .coop_tile = c.tile});
    ASSERT_TRUE(vk.ok()) << vk.error();
    const std::string what = fmt::format("tensor cores, {}, tile {}", precision_name(c.precision), c.tile);
    const double e = nmse(bf16_product(**vk, ws, xs, k, n, m), want);
    std::printf("[ metric   ] vulkan prefill bf16 product, %s: nmse %.3g\n", what.c_str(), e);
    EXPECT_LT(e, c.bound) << what;
    EXPECT_LT(nmse(bf16_product(**vk, ws, big, k, n, m), want_big), 1e-9) << what << ", |x| past 65504";
    EXPECT_EQ(wrong_picks(**vk, what), 0);
  }
}

// Decode and verify products (Options::gemv_rows 1 and 2 weight rows per work group, and the
// pick by shape) give the same bits, and each is within f32 rounding of the CPU: n = 1031 leaves a
// partial last block of rows, k = 4104 a partial last pass of the work group's chunks.
TEST(VulkanBackend, GemvRowsPerWorkGroupKeepTheBits) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t k = 4104, n = 1031;
  std::vector<float> ws(k * n), xs(k * 8);
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(static_cast<float>(i) * 0.37f);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<float>(i) * 0.11f);
  auto cpu = cpu::make_backend({.n_threads = 1});
  for (const int64_t m : {int64_t{1}, int64_t{3}, int64_t{8}}) {
    const std::vector<float> x(xs.begin(), xs.begin() + k * m);
    const std::vector<float> want = bf16_product(*cpu, ws, x, k, n, m);
    std::vector<float> first;
    for (const uint32_t rows : {0u, 1u, 2u}) {
      auto vk = vulkan::make_backend({.gemv_rows = rows});
      ASSERT_TRUE(vk.ok()) << vk.error();
      const std::vector<float> got = bf16_product(**vk, ws, x, k, n, m);
      EXPECT_LT(nmse(got, want), 1e-9) << m << " rows, gemv_rows " << rows;  // as PrefillProduct
      if (first.empty()) first = got;
      EXPECT_EQ(got, first) << m << " rows: gemv_rows " << rows << " changed the bits";
    }
  }
  EXPECT_FALSE(vulkan::make_backend({.gemv_rows = 4}).ok());
}

// ARGMAX of rows longer than one work group's segment (a vocabulary row) goes in two dispatches:
// the pick must be the CPU's, ties to the lower index across segment boundaries included.
std::vector<int32_t> argmax_rows(Backend& be, const std::vector<float>& xs, int64_t n, int64_t rows) {
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {n, rows}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* y = argmax(ctx, x);
  y->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({y});
  Executor ex({&be});
  std::vector<int32_t> out(static_cast<size_t>(rows), -1);
  EXPECT_TRUE(ex.allocate(g).ok());
  ex.set_input(*x, xs.data());
  const Status st = ex.compute(g);
  EXPECT_TRUE(st.ok()) << st.error();
  ex.get_output(*y, out.data());
  return out;
}

TEST(VulkanBackend, LongArgmaxRowsInSegments) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t n = 20000, rows = 4;
  std::vector<float> xs(n * rows);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7919) % 1009);  // ties everywhere
  for (int64_t c = 0; c < n; ++c) xs[static_cast<size_t>(2 * n + c)] = -INFINITY;  // a row with nothing above -inf
  xs[static_cast<size_t>(3 * n + 12345)] = 5000.0f;                                // one clear winner
  xs[static_cast<size_t>(3 * n + 19999)] = 5000.0f;                                // and a later tie
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  auto cpu = cpu::make_backend({.n_threads = 1});
  EXPECT_EQ(argmax_rows(*vk, xs, n, rows), argmax_rows(*cpu, xs, n, rows));
}

// Prefill attention (more rows than decode and verify) on its tiled shader: causal rows with no key
// at all (n_q > n_kv) are zeros, rows end mid-tile, heads share kv heads; as the CPU computes it.
std::vector<float> causal_attention(Backend& be, const std::vector<float>& qkv, int64_t d, int64_t heads, int64_t t,
                                    int64_t n) {
  Context ctx;
  Tensor* q = ctx.new_tensor(DType::F32, {d, heads, t}, "q");
  Tensor* k = ctx.new_tensor(DType::F32, {d, heads / 2, n}, "k");
  Tensor* v = ctx.new_tensor(DType::F32, {d, heads / 2, n}, "v");
  for (Tensor* x : {q, k, v}) x->flags |= TENSOR_INPUT;
  Tensor* o = flash_attn(ctx, q, k, v, nullptr, 0.125f, true);
  o->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({o});
  Executor ex({&be});
  EXPECT_TRUE(ex.allocate(g).ok());
  ex.set_input(*q, qkv.data());
  ex.set_input(*k, qkv.data() + nelements(*q));
  ex.set_input(*v, qkv.data() + nelements(*q) + nelements(*k));
  const Status st = ex.compute(g);
  EXPECT_TRUE(st.ok()) << st.error();
  std::vector<float> out(static_cast<size_t>(nelements(*o)), -1.0f);
  ex.get_output(*o, out.data());
  return out;
}

TEST(VulkanBackend, PrefillAttentionWithEmptyRows) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t d = 40, heads = 4, t = 29, n = 19;
  std::vector<float> qkv(static_cast<size_t>(d * heads * t + d * heads * n));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = std::sin(static_cast<float>(i) * 0.37f);
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  auto cpu = cpu::make_backend({.n_threads = 1});
  const std::vector<float> got = causal_attention(*vk, qkv, d, heads, t, n);
  const std::vector<float> want = causal_attention(*cpu, qkv, d, heads, t, n);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << i;
}

// Prefill attention over a key that the mask hides from every row and whose values are NaN (a
// cache slot never written): as on the CPU, a key of weight 0 adds nothing (0 * NaN would be NaN).
TEST(VulkanBackend, PrefillAttentionSkipsMaskedValues) {
  GL_REQUIRE_VULKAN();
  constexpr int64_t d = 32, heads = 4, t = 20, n = 24, hidden = 5;
  auto run = [&](Backend& be) {
    Context ctx;
    Tensor* q = ctx.new_tensor(DType::F32, {d, heads, t}, "q");
    Tensor* k = ctx.new_tensor(DType::F32, {d, heads / 2, n}, "k");
    Tensor* v = ctx.new_tensor(DType::F32, {d, heads / 2, n}, "v");
    Tensor* m = ctx.new_tensor(DType::F32, {n, t}, "mask");
    for (Tensor* x : {q, k, v, m}) x->flags |= TENSOR_INPUT;
    Tensor* o = flash_attn(ctx, q, k, v, m, 0.125f, false);
    o->flags |= TENSOR_OUTPUT;
    Graph g = Graph::build({o});
    Executor ex({&be});
    EXPECT_TRUE(ex.allocate(g).ok());
    auto wave = [](int64_t count, float f) {
      std::vector<float> xs(static_cast<size_t>(count));
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(static_cast<float>(i) * f);
      return xs;
    };
    std::vector<float> vs = wave(nelements(*v), 0.23f), mask(static_cast<size_t>(n * t), 0.0f);
    for (int64_t i = 0; i < d * heads / 2; ++i) vs[static_cast<size_t>(hidden * d * heads / 2 + i)] = NAN;
    for (int64_t r = 0; r < t; ++r) mask[static_cast<size_t>(r * n + hidden)] = -INFINITY;
    ex.set_input(*q, wave(nelements(*q), 0.37f).data());
    ex.set_input(*k, wave(nelements(*k), 0.11f).data());
    ex.set_input(*v, vs.data());
    ex.set_input(*m, mask.data());
    const Status st = ex.compute(g);
    EXPECT_TRUE(st.ok()) << st.error();
    std::vector<float> out(static_cast<size_t>(nelements(*o)), -1.0f);
    ex.get_output(*o, out.data());
    return out;
  };
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  auto cpu = cpu::make_backend({.n_threads = 1});
  const std::vector<float> got = run(*vk), want = run(*cpu);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(want[i])) << i;
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::fabs(want[i]))) << i;
  }
}

// A step graph computed again (same shapes and memory, new inputs) resubmits the recorded command
// buffer, and reads the new inputs.
TEST(VulkanBackend, RepeatedSplitIsReplayed) {
  GL_REQUIRE_VULKAN();
  auto vk = make(false);
  ASSERT_NE(vk, nullptr);
  Context ctx;
  Tensor* x = ctx.new_tensor(DType::F32, {64, 3}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* y = scale(ctx, rms_norm(ctx, x, 1e-6f), 2.0f);
  y->flags |= TENSOR_OUTPUT;
  Graph g = Graph::build({y});
  Executor ex({vk.get()});
  ASSERT_TRUE(ex.allocate(g).ok());
  const vulkan::ReplayStats before = vulkan::replay_stats(*vk);
  for (int run = 0; run < 3; ++run) {
    std::vector<float> xs(192), out(192, 0.0f);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7 + run * 13) % 17) - 8.0f;
    ex.set_input(*x, xs.data());
    ASSERT_TRUE(ex.compute(g).ok());
    ex.get_output(*y, out.data());
    for (int r = 0; r < 3; ++r) {
      double ss = 0.0;
      for (int i = 0; i < 64; ++i) ss += static_cast<double>(xs[r * 64 + i]) * xs[r * 64 + i];
      const double inv = 1.0 / std::sqrt(ss / 64.0 + 1e-6);
      for (int i = 0; i < 64; ++i)
        ASSERT_NEAR(out[r * 64 + i], 2.0 * xs[r * 64 + i] * inv, 1e-5) << "run " << run << " row " << r << " i " << i;
    }
  }
  const vulkan::ReplayStats after = vulkan::replay_stats(*vk);
  EXPECT_EQ(after.records - before.records, 1);
  EXPECT_EQ(after.replays - before.replays, 2);
}

}  // namespace
}  // namespace gl
