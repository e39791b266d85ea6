// gemv_stream.cuh - the staged int8 GEMV: weight rows stream into shared memory through the bulk
// copy engine (cp.async.bulk, sm_90) several row groups ahead, and the threads dot them there.
//
//   if (stage_fits<WT>(w, rows)) return launch_staged<WT, M>(ctx, w, rows, epi);  // gemv_launch.cuh
//
// Why: the register-loaded GEMV (gemv_kernel) keeps only the loads a thread's
// registers hold in flight, and ncu had them at 44-58% of the H100's DRAM bandwidth in a 9B
// Q4_K_M decode step (s24): latency-bound. Here one thread asks the copy engine for whole rows (a
// row is one copy), the next group of R rows while the block reads this one, so the bytes in
// flight are the stages' shared memory and cost no registers; and the first two groups are asked
// for before pdl_wait, while the kernel before still runs (the weights are fixed: WDesc::early).
// Rows are read from shared memory with the same chunk loaders (Src = FromShared) and reduced as
// gemv_kernel reduces them: thread t sums chunks t, t + T, ... of a row in order, then the warp's
// xor tree and the warps in order, T from gemv_block_threads. So an output has gemv_kernel's bits
// at any activation row count (batch invariance: MTP verify rows equal decode rows).
#pragma once

#include <algorithm>

#include "gemv_kernel.cuh"
#include "ggml-lite/diag.h"

namespace gl::cuda::mm {

// ---- the bulk copy engine and its barriers (PTX, sm_90) -----------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// The barriers' initialisation, visible to the copy engine (the async proxy).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// This thread's arrival, and `bytes` more that the phase waits for.
__device__ __forceinline__ void mbar_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t a = smem_addr(bar);
  uint32_t done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(a), "r"(parity)
                 : "memory");
  }
}

// bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst; the
// barrier's phase completes when they have landed.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// Shared memory the threads have read, about to be overwritten by the copy engine.
__device__ __forceinline__ void async_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// ---- the kernel ----------------------------------------------------------------------------------

// Row groups in flight a block: the one being read and the next. Measured on the H200 (9B Q4_K_M
// and Q8_0 decode, s25): 2 stages beat 3 and 5-6 (48 KB a block), the smaller blocks giving more
// warps a SM to read the stages; the shared memory in flight a SM stays at ~200 KB either way.
inline constexpr int kStages = 2;

// The weight types whose int8 chunks load from shared memory.
template <DType WT>
inline constexpr bool kStageable = requires(const char* p, typename ActChunk<WT, Q8Act>::Chunk& c) {
  ActChunk<WT, Q8Act>::load_staged(p, int64_t{0}, c);
};

// Up to M activation rows in one group (a 2-D decode or verify product, or a pair) against R weight
// rows a row group; block b takes row groups b, b + G, ... and stage i % kStages holds its i-th.
// Thread 0 asks for group i + kStages once the block has read stage i % kStages.
template <DType WT, int M, int R, class Rows, class Epi>
__global__ void __launch_bounds__(kMaxThreads) gemv_stream_kernel(WDesc w, Rows rows, Epi epi) {
  using Act = Q8Act;
  using C = ActChunk<WT, Act>;
  constexpr bool kPair = kPaired<Rows>;
  constexpr int RO = kPair ? R / 2 : R;  // output rows of each weight matrix
  static_assert(!kPair || (R % 2 == 0 && std::is_same_v<Epi, NoEpilogue>), "a pair: R / 2 rows of each");
  extern __shared__ __align__(128) char stage_mem[];
  __shared__ uint64_t full[kStages];
  __shared__ float red[kMaxThreads / kWarp][R * M];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarp, warp = tid / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  const int64_t n_chunks = ceil_div<int64_t>(w.k, C::E);
  const int64_t n_groups = ceil_div<int64_t>(w.n, RO);
  const auto row_bytes = static_cast<uint32_t>(w.row_bytes);
  const uint32_t stage_bytes = R * row_bytes;
  auto issue = [&](int64_t i) {  // thread 0: the block's i-th group into stage i % kStages
    const int64_t g = blockIdx.x + i * gridDim.x;
    if (g >= n_groups) return;
    const char* wrow[R];
    if constexpr (kPair) {
      group_rows<R, true>(rows.gate.w, rows.up.w, g * RO, w, wrow);
    } else {
      group_rows<R, false>(rows.w, nullptr, g * R, w, wrow);
    }
    char* dst = stage_mem + (i % kStages) * stage_bytes;
    uint64_t* bar = &full[i % kStages];
    mbar_expect(bar, stage_bytes);
#pragma unroll
    for (int r = 0; r < R; ++r) bulk_copy(dst + r * row_bytes, wrow[r], row_bytes, bar);
  };

  pdl_trigger();
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    mbar_init_fence();
    if (w.early)
      for (int i = 0; i < kStages; ++i) issue(i);  // no kernel writes these weights
  }
  __syncthreads();
  pdl_wait();
  if (tid == 0 && !w.early)
    for (int i = 0; i < kStages; ++i) issue(i);

  Group<M> grp;
  [[maybe_unused]] Group<M> up, act;
  lead_rows(rows).template resolve<M>(0, grp);
  if constexpr (kPair) {
    rows.up.template resolve<M>(0, up);
    rows.act.template resolve<M>(0, act);
  }
  // One chunk a thread (the common case): its activations are loaded once.
  const bool one = n_chunks <= blockDim.x;
  typename Act::template Vals<C> xv[M];
  if (one && tid < n_chunks)
#pragma unroll
    for (int i = 0; i < M; ++i) Act{}.template load<C>(grp.x[i], tid, w.k, xv[i]);

  for (int64_t it = 0;; ++it) {
    const int64_t g = blockIdx.x + it * gridDim.x;
    if (g >= n_groups) break;
    mbar_wait(&full[it % kStages], static_cast<uint32_t>((it / kStages) & 1));
    const char* base = stage_mem + (it % kStages) * stage_bytes;
    float acc[R][M];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i) acc[r][i] = 0.0f;
    for (int64_t c = tid; c < n_chunks; c += blockDim.x) {
      if (!one)
#pragma unroll
        for (int i = 0; i < M; ++i) Act{}.template load<C>(grp.x[i], c, w.k, xv[i]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        typename C::Chunk wc;
        C::load_staged(base + r * row_bytes, c, wc);
        chunk_ready<C>(wc);
#pragma unroll
        for (int i = 0; i < M; ++i) acc[r][i] = Act::template dot<C>(wc, xv[i], acc[r][i]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const float s = warp_sum(acc[r][i]);
        if (lane == 0) red[warp][r * M + i] = s;
      }
    __syncthreads();  // stage it % kStages is read: refill it
    if (tid == 0) {
      async_proxy_fence();
      issue(it + kStages);
    }
    // Output o = (row g * RO + o / M, activation row o % M).
    for (int o = tid; o < RO * M; o += static_cast<int>(blockDim.x)) {
      const int out_r = o / M, out_i = o % M;
      const int64_t n = g * RO + out_r;
      if (n >= w.n || out_i >= grp.count) continue;
      float s = red[0][o];
      for (int v = 1; v < n_warps; ++v) s += red[v][o];
      pick_out(grp, out_i)[n] = s;
      if constexpr (kPair) {  // as gemv_kernel: the up row's sum in the same order, then the swiglu
        float u = red[0][o + RO * M];
        for (int v = 1; v < n_warps; ++v) u += red[v][o + RO * M];
        pick_out(up, out_i)[n] = u;
        pick_out(act, out_i)[n] = apply_binary<BinaryOp::SWIGLU>(s, u);
      }
      if constexpr (!std::is_same_v<Epi, NoEpilogue>) {
        float epi_in[kMaxChain];
        chain_fetch(epi, n, grp.row0 + out_i, 0, 0, epi_in);
        chain_run(epi, s, n, grp.row0 + out_i, 0, 0, epi_in);
      }
    }
    __syncthreads();
  }
}

// ---- the launch ----------------------------------------------------------------------------------

// Weight rows a row group (a pair: half of each matrix). Measured on the H200 (9B Q4_K_M, s25):
// 2 rows decode 324 tok/s against 335 at 4, spec 3 forced 636 against 710.
inline constexpr int kStageRows = 4;

// Whether a product of a stageable type (kStageable) takes the staged GEMV: one group of
// activation rows (the callers take it for at most 4), dense 16-byte aligned rows whose two
// stages fit a block's shared memory.
inline constexpr int64_t kMaxStageSmem = 160 * 1024;

template <DType WT, class Rows>
bool stage_fits(const WDesc& w, const Rows& rows) {
  static const bool on = !diag_env(Diag::CUDA_STAGED_OFF);
  return on && w.vec && w.row_bytes > 0 && w.row_bytes % 16 == 0 && lead_rows(rows).count() == 1 &&
         kStages * kStageRows * w.row_bytes <= kMaxStageSmem;
}

template <DType WT, int M, class Rows, class Epi>
void launch_staged(const Ctx& ctx, const WDesc& w, const Rows& rows, const Epi& epi) {
  constexpr int R = kStageRows;
  auto* kernel = gemv_stream_kernel<WT, M, R, Rows, Epi>;
  const int threads = gemv_block_threads<WT, Q8Act>(w.k);
  const size_t smem = static_cast<size_t>(kStages * R * w.row_bytes);
  // The limit only ever at the most stage_fits admits: one instantiation serves rows of every
  // length, and a limit set to this launch's size would refuse a longer row's launch on another
  // thread, or a captured graph's node re-checked at replay.
  GL_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kMaxStageSmem)));
  const int64_t groups = ceil_div<int64_t>(w.n, kPaired<Rows> ? R / 2 : R);
  const int64_t grid = std::min<int64_t>(groups, device_slots(ctx, kernel, threads, smem));
  launch_pdl_smem(kernel, dim3(static_cast<unsigned>(grid)), dim3(threads), smem, ctx.stream, w, rows, epi);
  GL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gl::cuda::mm
