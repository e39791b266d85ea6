// matmul_id.cu - MUL_MAT_ID (MoE experts) on CUDA, routed on the device.
//
// Why no host round trip: reading ids back would synchronise the stream every MoE layer and rule
// out CUDA graphs. Two shapes of the same computation (matmul_gemv.cu does the arithmetic):
//   * few tokens (decode, verify): one single-row GEMV per slot (u, t) straight from ids;
//   * more tokens: one block counts the slots per expert, scans the counts and lays the slots out
//     expert by expert in tiles of up to kGemvMaxRows rows; the GEMV then reads each expert once
//     per tile. The grid is sized for the worst case (tiles past the real count exit at once).
// Both give bit-identical rows (the GEMV's reduction order does not depend on the rows it is
// grouped with), so the switch between them is a speed choice only. Experts the tensor cores can
// take (matmul_id_mma.cu: F16, BF16, quantized) get tiles of kMmaTileRows slots there instead: the
// products are compute-bound by then. An id outside [0, E) gives a NaN row (the CPU reference
// aborts; a kernel cannot).
#include <algorithm>

#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

using mm::ceil_div;

constexpr int64_t kDirectMaxTokens = mm::kIdDirectMaxTokens;
constexpr int kRouteThreads = 256;

struct RouteOut {
  int32_t* slots;
  int32_t* tile_expert;
  int32_t* tile_begin;
  int32_t* tile_count;
  int32_t* n_tiles;
};

// In-place exclusive prefix sum of data[0, n) by the whole block; returns the total to every thread.
// tmp holds blockDim.x ints.
__device__ int32_t block_exclusive_scan(int32_t* data, int n, int32_t* tmp) {
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int per = (n + nt - 1) / nt, begin = min(n, tid * per), end = min(n, begin + per);
  int32_t local = 0;
  for (int i = begin; i < end; ++i) local += data[i];
  tmp[tid] = local;
  __syncthreads();
  for (int off = 1; off < nt; off *= 2) {  // Hillis-Steele inclusive scan of the per-thread sums
    const int32_t v = tid >= off ? tmp[tid - off] : 0;
    __syncthreads();
    tmp[tid] += v;
    __syncthreads();
  }
  int32_t prefix = tmp[tid] - local;
  for (int i = begin; i < end; ++i) {
    const int32_t c = data[i];
    data[i] = prefix;
    prefix += c;
  }
  const int32_t total = tmp[nt - 1];
  __syncthreads();
  return total;
}

// One block: slots (u, t) grouped by expert into tiles of at most tile_rows rows.
__global__ void route_kernel(const char* ids, int64_t ids_nb0, int64_t ids_nb1, int n_used, int n_slots, int n_experts,
                             int tile_rows, int64_t n_out, float* dst, RouteOut out) {
  extern __shared__ int32_t sm[];
  int32_t* count = sm;                     // slots per expert
  int32_t* row_off = sm + n_experts;       // first sorted slot of each expert, then its cursor
  int32_t* tile_off = sm + 2 * n_experts;  // first tile of each expert
  int32_t* tmp = sm + 3 * n_experts;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  auto expert_of = [&](int s) {
    return *reinterpret_cast<const int32_t*>(ids + (s % n_used) * ids_nb0 + (s / n_used) * ids_nb1);
  };

  for (int e = tid; e < n_experts; e += nt) count[e] = 0;
  __syncthreads();
  for (int s = tid; s < n_slots; s += nt) {
    const int32_t e = expert_of(s);
    if (e >= 0 && e < n_experts) {
      atomicAdd(&count[e], 1);
    } else {
      for (int64_t j = 0; j < n_out; ++j) dst[s * n_out + j] = __int_as_float(0x7fc00000);
    }
  }
  __syncthreads();
  for (int e = tid; e < n_experts; e += nt) {
    row_off[e] = count[e];
    tile_off[e] = (count[e] + tile_rows - 1) / tile_rows;
  }
  __syncthreads();
  block_exclusive_scan(row_off, n_experts, tmp);
  const int32_t n_tiles = block_exclusive_scan(tile_off, n_experts, tmp);

  for (int e = tid; e < n_experts; e += nt)
    for (int32_t j = 0; j * tile_rows < count[e]; ++j) {
      const int32_t i = tile_off[e] + j;
      out.tile_expert[i] = e;
      out.tile_begin[i] = row_off[e] + j * tile_rows;
      out.tile_count[i] = min(tile_rows, count[e] - j * tile_rows);
    }
  __syncthreads();
  // Order within an expert follows the atomics; it only decides which rows share a tile.
  for (int s = tid; s < n_slots; s += nt) {
    const int32_t e = expert_of(s);
    if (e >= 0 && e < n_experts) out.slots[atomicAdd(&row_off[e], 1)] = s;
  }
  if (tid == 0) *out.n_tiles = n_tiles;
}

// Slots per tile of the tiled path: the tensor cores' tile where they take the experts.
int64_t tile_rows_of(const Tensor& dst) {
  return mm::mma_id_supported(*dst.src[0], *dst.src[1]) ? mm::kMmaTileRows : mm::kGemvMaxRows;
}

// Tiles of the tiled path: full tiles of the slots plus one partial tile per expert at most.
int64_t max_tiles_of(int64_t n_slots, int64_t n_experts, int64_t tile_rows) {
  return ceil_div<int64_t>(n_slots, tile_rows) + std::min(n_experts, n_slots);
}

// The routing tables of the tiled path (slots, then per tile its expert, first row and row
// count, then the tile count): their length in int32 words, 0 for the direct path.
int64_t route_words(const Tensor& dst) {
  const Tensor& ids = *dst.src[2];
  const int64_t n_used = ids.ne[0], n_tokens = ids.ne[1], n_experts = dst.src[0]->ne[2];
  if (nelements(dst) == 0 || n_tokens <= kDirectMaxTokens) return 0;
  const int64_t n_slots = n_used * n_tokens;
  return n_slots + 3 * max_tiles_of(n_slots, n_experts, tile_rows_of(dst)) + 1;
}

}  // namespace

size_t mul_mat_id_route_bytes(const Tensor& dst) {
  return mm::ceil_div<size_t>(static_cast<size_t>(route_words(dst)) * sizeof(int32_t), 256) * 256;
}

// The routing tables, then room for the activations the products read: int8 under
// Precision::FAST (matmul_gemv_q8.cu), or rounded for the tensor cores (matmul_id_mma.cu).
size_t mul_mat_id_workspace(const Tensor& dst) {
  if (nelements(dst) == 0) return 0;
  const size_t act = route_words(dst) > 0 && tile_rows_of(dst) == mm::kMmaTileRows
                         ? mm::mma_id_act_bytes(*dst.src[1])
                         : mm::q8_act_bytes(dst.src[0]->type, *dst.src[1]);
  return mul_mat_id_route_bytes(dst) + act;
}

void mul_mat_id(const Ctx& ctx, Tensor& dst) {
  const Tensor& experts = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  if (nelements(dst) == 0) return;
  const int64_t n_used = ids.ne[0], n_tokens = ids.ne[1], n_experts = experts.ne[2];
  if (n_tokens <= kDirectMaxTokens) return mm::gemv_mul_mat_id(ctx, experts, x, ids, dst, nullptr);

  const int64_t n_slots = n_used * n_tokens;
  const int64_t tile_rows = tile_rows_of(dst);
  const int64_t max_tiles = max_tiles_of(n_slots, n_experts, tile_rows);
  GL_ASSERT(dst.workspace != nullptr, "cuda mul_mat_id: tiled path without its planned workspace");
  auto* base = static_cast<int32_t*>(dst.workspace);
  const RouteOut out{base, base + n_slots, base + n_slots + max_tiles, base + n_slots + 2 * max_tiles,
                     base + n_slots + 3 * max_tiles};
  const size_t smem = static_cast<size_t>(3 * n_experts + kRouteThreads) * sizeof(int32_t);
  route_kernel<<<1, kRouteThreads, smem, ctx.stream>>>(
      static_cast<const char*>(ids.data), static_cast<int64_t>(ids.nb[0]), static_cast<int64_t>(ids.nb[1]),
      static_cast<int>(n_used), static_cast<int>(n_slots), static_cast<int>(n_experts), static_cast<int>(tile_rows),
      experts.ne[1], static_cast<float*>(dst.data), out);
  GL_CUDA_CHECK(cudaGetLastError());

  const mm::IdTiles tiles{out.slots, out.tile_expert, out.tile_begin, out.tile_count, out.n_tiles, max_tiles};
  if (tile_rows == mm::kMmaTileRows)
    return mm::mma_mul_mat_id(ctx, experts, x, dst, tiles,
                              static_cast<char*>(dst.workspace) + mul_mat_id_route_bytes(dst));
  mm::gemv_mul_mat_id(ctx, experts, x, ids, dst, &tiles);
}

}  // namespace gl::cuda
