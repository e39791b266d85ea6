// gemv_probe.cu - standalone: the int8-activation K-quant GEMV (M = 1) as production launches it,
// persistent variants (bulk L2 prefetch of later row groups; registers of the next row group, which
// became gemv_pipe_kernel), and a plain read of the same bytes. Each launch reads a different region
// of a 1 GB pool (no L2 reuse); launches are captured as a graph with programmatic serialization, as
// the decode step runs them. Built by hand from the repository root (not by CMake):
//   nvcc -DGL_HAVE_CUDA -I backends/cuda/include -I ggml-lite/include -I backends/cuda/src
//     -I backends/cuda/src/ops -O3 -arch=sm_90 --expt-relaxed-constexpr -std=c++20
//     docs/bench/s21/gemv_probe.cu -Lbuild-cuda/backends/cuda -lggml-lite-cuda
//     -Lbuild-cuda/ggml-lite -lggml-lite-core -lfmt -o gemv_probe
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gemv_kernel.cuh"

using namespace gl;
using namespace gl::cuda;
using namespace gl::cuda::mm;

namespace gl::cuda::mm {
int64_t q8_row_stride(int64_t k) { return ceil_div<int64_t>(k + k / 32 * 4, 16) * 16; }
}  // namespace gl::cuda::mm

__device__ __forceinline__ void bulk_prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// Persistent: block b takes row groups b, b + G, ...; thread 0 asks L2 for group g + D * G's rows.
template <DType WT, int R, int D>
__global__ void __launch_bounds__(kMaxThreads) gemv_persist(WDesc w, MulMatRows rows) {
  using Act = Q8Act;
  using C = ActChunk<WT, Act>;
  __shared__ float red[kMaxThreads / kWarp][R];
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const int n_warps = blockDim.x / kWarp;
  const int64_t n_chunks = ceil_div<int64_t>(w.k, C::E);
  const int64_t n_groups = ceil_div<int64_t>(w.n, R);
  const Act x{};
  pdl_trigger();
  if (D > 0 && tid == 0)
    for (int d = 0; d < D; ++d) {
      const int64_t g = blockIdx.x + int64_t{d} * gridDim.x;
      if (g < n_groups)
        bulk_prefetch_l2(rows.w + g * R * w.nb1,
                         static_cast<uint32_t>((R < w.n - g * R ? int64_t{R} : w.n - g * R) * w.row_bytes));
    }
  pdl_wait();
  Group<1> grp;
  rows.template resolve<1>(0, grp);
  for (int64_t g = blockIdx.x; g < n_groups; g += gridDim.x) {
    if (D > 0 && tid == 0) {
      const int64_t gp = g + int64_t{D} * gridDim.x;
      if (gp < n_groups)
        bulk_prefetch_l2(rows.w + gp * R * w.nb1,
                         static_cast<uint32_t>((R < w.n - gp * R ? int64_t{R} : w.n - gp * R) * w.row_bytes));
    }
    const int64_t n0 = g * R;
    const char* wrow[R];
    block_rows<R>(grp.w, n0, w, wrow);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
#pragma unroll(kChunksInFlight <WT, Act>)
    for (int64_t c = tid; c < n_chunks; c += blockDim.x) {
      typename C::Chunk wc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) C::load(wrow[r], c, w, wc[r]);
      typename Act::template Vals<C> xv;
      x.template load<C>(grp.x[0], c, w.k, xv);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] = Act::template dot<C>(wc[r], xv, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float s = warp_sum(acc[r]);
      if (lane == 0) red[warp][r] = s;
    }
    __syncthreads();
    if (tid < R && n0 + tid < w.n) {
      float s = red[0][tid];
      for (int v = 1; v < n_warps; ++v) s += red[v][tid];
      grp.out[0][n0 + tid] = s;
    }
    __syncthreads();
  }
}

// Persistent and software-pipelined (K with at most one chunk per thread): block b takes row
// groups b, b + G, ...; the next group's weight chunks load into registers while this group's dot
// products, reduction and stores run. x's chunk is loaded once for all groups.
template <DType WT, int R>
__global__ void __launch_bounds__(kMaxThreads) gemv_pipe(WDesc w, MulMatRows rows) {
  using Act = Q8Act;
  using C = ActChunk<WT, Act>;
  __shared__ float red[kMaxThreads / kWarp][R];
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const int n_warps = blockDim.x / kWarp;
  const int64_t n_chunks = ceil_div<int64_t>(w.k, C::E);
  const int64_t n_groups = ceil_div<int64_t>(w.n, R);
  const bool active = tid < n_chunks;
  const Act x{};
  typename C::Chunk cur[R], nxt[R];
  auto load_group = [&](int64_t g, typename C::Chunk(&wc)[R]) {
    const char* wrow[R];
    block_rows<R>(rows.w, g * R, w, wrow);
#pragma unroll
    for (int r = 0; r < R; ++r) C::load(wrow[r], tid, w, wc[r]);
  };
  pdl_trigger();
  int64_t g = blockIdx.x;
  if (active && g < n_groups) load_group(g, cur);
  pdl_wait();
  Group<1> grp;
  rows.template resolve<1>(0, grp);
  typename Act::template Vals<C> xv;
  if (active) x.template load<C>(grp.x[0], tid, w.k, xv);
  for (; g < n_groups; g += gridDim.x) {
    const int64_t gn = g + gridDim.x;
    if (active && gn < n_groups) load_group(gn, nxt);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = active ? Act::template dot<C>(cur[r], xv, 0.0f) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float s = warp_sum(acc[r]);
      if (lane == 0) red[warp][r] = s;
    }
    __syncthreads();
    const int64_t n0 = g * R;
    if (tid < R && n0 + tid < w.n) {
      float s = red[0][tid];
      for (int v = 1; v < n_warps; ++v) s += red[v][tid];
      grp.out[0][n0 + tid] = s;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) cur[r] = nxt[r];
  }
}

// The bytes of the matrix, 16 at a time, grid-stride; one word per block out.
__global__ void stream_kernel(const uint4* p, int64_t n16, uint32_t* out) {
  pdl_trigger();
  pdl_wait();
  uint32_t a = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n16; i += int64_t{gridDim.x} * blockDim.x) {
    const uint4 v = __ldg(p + i);
    a ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (a == 0x12345678u) out[blockIdx.x] = a;
}

// A launch boundary's cost: one block writes one float (as a small node of the step does).
__global__ void tiny_kernel(float* out, int n) {
  pdl_trigger();
  pdl_wait();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = out[i] * 0.5f + 1.0f;
}

struct Shape {
  const char* name;
  int64_t k, n;
};

constexpr int64_t kPool = int64_t{1} << 30;
constexpr int kLaunches = 40;

template <class F>
double time_graph(cudaStream_t s, F&& body) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  GL_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kLaunches; ++i) body(i);
  GL_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  GL_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 3; ++i) GL_CUDA_CHECK(cudaGraphLaunch(ge, s));
  cudaEvent_t a, b;
  GL_CUDA_CHECK(cudaEventCreate(&a));
  GL_CUDA_CHECK(cudaEventCreate(&b));
  float best = 1e30f;
  for (int rep = 0; rep < 10; ++rep) {
    GL_CUDA_CHECK(cudaEventRecord(a, s));
    GL_CUDA_CHECK(cudaGraphLaunch(ge, s));
    GL_CUDA_CHECK(cudaEventRecord(b, s));
    GL_CUDA_CHECK(cudaEventSynchronize(b));
    float ms;
    GL_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  GL_CUDA_CHECK(cudaGraphExecDestroy(ge));
  GL_CUDA_CHECK(cudaGraphDestroy(g));
  return best * 1000.0 / kLaunches;
}

template <DType WT>
void run_type(const char* tname, int block_bytes, char* pool, char* const* xqs, float* out, float* out2, uint32_t* sink,
              cudaStream_t s, int sms) {
  const Shape shapes[] = {{"4096x4096", 4096, 4096},
                          {"4096x8192", 4096, 8192},
                          {"4096x24576", 4096, 24576},
                          {"12288x4096", 12288, 4096},
                          {"4096x1024", 4096, 1024}};
  for (const Shape& sh : shapes) {
    const int64_t row_bytes = sh.k / 256 * block_bytes, bytes = row_bytes * sh.n;
    const int64_t stride = (bytes + 4095) / 4096 * 4096;
    const int64_t slots = kPool / stride;
    WDesc w{sh.k, sh.n, 0, row_bytes, true, row_bytes, true};
    char* xq = xqs[sh.k == 4096 ? 0 : 1];
    auto rows_at = [&](int i, float* o) {
      MulMatRows r{pool + (i % slots) * stride, 0, 0, 1, 1, xq, 0, 0, 0, o, sh.n, 1, 1, 1, 1};
      return r;
    };
    const int threads = gemv_block_threads<WT, Q8Act>(sh.k);
    auto report = [&](const char* what, double us) {
      printf("%-6s %-11s %-28s %8.2f us %7.0f GB/s\n", tname, sh.name, what, us, bytes / us / 1e3);
    };
    report("stream 132x8x256", time_graph(s, [&](int i) {
             launch_pdl(stream_kernel, dim3(sms * 8), dim3(256), s,
                        reinterpret_cast<const uint4*>(pool + (i % slots) * stride), bytes / 16, sink);
           }));
    auto prod = [&]<int R>(const char* what) {
      report(what, time_graph(s, [&](int i) {
               launch_pdl(gemv_kernel<WT, 1, R, Q8Act, MulMatRows, NoEpilogue>, dim3(ceil_div<int64_t>(sh.n, R)),
                          dim3(threads), s, w, Q8Act{}, rows_at(i, out), NoEpilogue{});
             }));
    };
    prod.template operator()<1>("prod R1");
    prod.template operator()<2>("prod R2");
    prod.template operator()<4>("prod R4");
    auto pers = [&]<int R, int D>(int per_sm, const char* what) {
      int occ = 0;
      GL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gemv_persist<WT, R, D>, threads, 0));
      const int64_t grid = std::min<int64_t>(ceil_div<int64_t>(sh.n, R), int64_t{sms} * std::min(per_sm, occ));
      char buf[64];
      snprintf(buf, sizeof buf, "%s occ%d grid%lld", what, occ, static_cast<long long>(grid));
      report(buf, time_graph(s, [&](int i) {
               launch_pdl(gemv_persist<WT, R, D>, dim3(grid), dim3(threads), s, w, rows_at(i, out2));
             }));
    };
    pers.template operator()<2, 0>(64, "pers R2 D0");
    pers.template operator()<2, 2>(64, "pers R2 D2");
    pers.template operator()<2, 4>(64, "pers R2 D4");
    pers.template operator()<4, 0>(64, "pers R4 D0");
    pers.template operator()<4, 2>(64, "pers R4 D2");
    pers.template operator()<4, 4>(64, "pers R4 D4");
    pers.template operator()<4, 2>(4, "pers R4 D2 4/SM");
    pers.template operator()<2, 4>(8, "pers R2 D4 8/SM");
    auto pipe = [&]<int R>(int per_sm, const char* what) {
      if (ceil_div<int64_t>(sh.k, ActChunk<WT, Q8Act>::E) > threads) return;
      int occ = 0;
      GL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gemv_pipe<WT, R>, threads, 0));
      const int64_t grid = std::min<int64_t>(ceil_div<int64_t>(sh.n, R), int64_t{sms} * std::min(per_sm, occ));
      char buf[64];
      snprintf(buf, sizeof buf, "%s occ%d grid%lld", what, occ, static_cast<long long>(grid));
      report(buf, time_graph(s, [&](int i) {
               launch_pdl(gemv_pipe<WT, R>, dim3(grid), dim3(threads), s, w, rows_at(i, out2));
             }));
    };
    pipe.template operator()<1>(64, "pipe R1");
    pipe.template operator()<2>(64, "pipe R2");
    pipe.template operator()<4>(64, "pipe R4");
    pipe.template operator()<2>(8, "pipe R2 8/SM");
    pipe.template operator()<4>(6, "pipe R4 6/SM");
    pipe.template operator()<4>(4, "pipe R4 4/SM");
    if (ceil_div<int64_t>(sh.k, ActChunk<WT, Q8Act>::E) <= threads) {
      launch_pdl(gemv_kernel<WT, 1, 2, Q8Act, MulMatRows, NoEpilogue>, dim3(ceil_div<int64_t>(sh.n, 2)), dim3(threads),
                 s, w, Q8Act{}, rows_at(0, out), NoEpilogue{});
      launch_pdl(gemv_pipe<WT, 2>, dim3(sms * 4), dim3(threads), s, w, rows_at(0, out2));
      GL_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<float> a(sh.n), b(sh.n);
      GL_CUDA_CHECK(cudaMemcpy(a.data(), out, sh.n * 4, cudaMemcpyDeviceToHost));
      GL_CUDA_CHECK(cudaMemcpy(b.data(), out2, sh.n * 4, cudaMemcpyDeviceToHost));
      int64_t diff = 0;
      for (int64_t i = 0; i < sh.n; ++i) diff += memcmp(&a[i], &b[i], 4) != 0;
      printf("%-6s %-11s pipe check: %lld of %lld outputs differ\n", tname, sh.name, static_cast<long long>(diff),
             static_cast<long long>(sh.n));
    }
    // Same bits: the persistent kernel's outputs against production's, on slot 0.
    launch_pdl(gemv_kernel<WT, 1, 2, Q8Act, MulMatRows, NoEpilogue>, dim3(ceil_div<int64_t>(sh.n, 2)), dim3(threads), s,
               w, Q8Act{}, rows_at(0, out), NoEpilogue{});
    launch_pdl(gemv_persist<WT, 2, 4>, dim3(sms * 4), dim3(threads), s, w, rows_at(0, out2));
    GL_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> a(sh.n), b(sh.n);
    GL_CUDA_CHECK(cudaMemcpy(a.data(), out, sh.n * 4, cudaMemcpyDeviceToHost));
    GL_CUDA_CHECK(cudaMemcpy(b.data(), out2, sh.n * 4, cudaMemcpyDeviceToHost));
    int64_t diff = 0;
    for (int64_t i = 0; i < sh.n; ++i) diff += memcmp(&a[i], &b[i], 4) != 0;
    printf("%-6s %-11s check: %lld of %lld outputs differ (out[0] %g)\n", tname, sh.name, static_cast<long long>(diff),
           static_cast<long long>(sh.n), a[0]);
  }
}

int main() {
  int sms = 0;
  GL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp p;
  GL_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  printf("device %s, %d SMs\n", p.name, sms);
  char* pool;
  GL_CUDA_CHECK(cudaMalloc(&pool, kPool));
  // Random bytes, headers made sane: every 144/210-byte block's d, dmin fields small fp16s. Simpler:
  // fill the pool with bytes whose fp16 reading anywhere is finite (high byte < 0x7c).
  {
    std::vector<uint8_t> h(kPool);
    std::mt19937 rng(1);
    for (auto& b : h) b = static_cast<uint8_t>(rng() & 0x3f);
    GL_CUDA_CHECK(cudaMemcpy(pool, h.data(), kPool, cudaMemcpyHostToDevice));
  }
  // An int8 activation row for each k: k quants, then k / 32 float scales (quantize_rows_q8's layout).
  auto make_x = [](int64_t k) {
    std::vector<int8_t> h(q8_row_stride(k));
    std::mt19937 rng(2);
    for (int64_t i = 0; i < k; ++i) h[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
    for (int64_t j = 0; j < k / 32; ++j) {
      const float d = 0.01f;
      memcpy(&h[k + 4 * j], &d, 4);
    }
    char* x;
    GL_CUDA_CHECK(cudaMalloc(&x, h.size()));
    GL_CUDA_CHECK(cudaMemcpy(x, h.data(), h.size(), cudaMemcpyHostToDevice));
    return x;
  };
  char* xq[2] = {make_x(4096), make_x(12288)};
  float *out, *out2;
  uint32_t* sink;
  GL_CUDA_CHECK(cudaMalloc(&out, 32768 * 4));
  GL_CUDA_CHECK(cudaMalloc(&out2, 32768 * 4));
  GL_CUDA_CHECK(cudaMalloc(&sink, 1 << 20));
  cudaStream_t s;
  GL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    const double tiny = time_graph(s, [&](int) { launch_pdl(tiny_kernel, dim3(1), dim3(128), s, out, 128); });
    const double ew = time_graph(s, [&](int) { launch_pdl(tiny_kernel, dim3(32), dim3(128), s, out, 4096); });
    printf("chain of 1-block kernels: %.2f us each; 32-block 4096-float kernels: %.2f us each\n", tiny, ew);
    // GEMV 4096x4096 alone and alternating with a 1-block kernel.
    const int64_t row_bytes = 4096 / 256 * 144, bytes = row_bytes * 4096;
    WDesc w{4096, 4096, 0, row_bytes, true, row_bytes, true};
    auto rows_at = [&](int i) {
      return MulMatRows{pool + (i % 100) * bytes, 0, 0, 1, 1, xq[0], 0, 0, 0, out2, 4096, 1, 1, 1, 1};
    };
    // Every `every`-th launch a GEMV, the others 1-block kernels: us a launch.
    auto chain = [&](int every) {
      return time_graph(s, [&](int i) {
        if (i % every) {
          launch_pdl(tiny_kernel, dim3(1), dim3(128), s, out, 128);
        } else {
          launch_pdl(gemv_kernel<DType::Q4_K, 1, 2, Q8Act, MulMatRows, NoEpilogue>, dim3(2048), dim3(64), s, w, Q8Act{},
                     rows_at(i), NoEpilogue{});
        }
      });
    };
    const double g = chain(1), gt = chain(2), gtt = chain(4);
    printf("q4_K 4096^2 GEMV chain: %.2f us each; GEMV + 1 tiny: %.2f us a pair; GEMV + 3 tiny: %.2f us a group\n", g,
           2 * gt, 4 * gtt);
  }
  run_type<DType::Q4_K>("q4_K", 144, pool, xq, out, out2, sink, s, sms);
  run_type<DType::Q6_K>("q6_K", 210, pool, xq, out, out2, sink, s, sms);
  return 0;
}
