// gemv_launch.cuh - which GEMV kernel and shape a product takes (gemv_kernel.cuh's, or the staged
// one of gemv_stream.cuh): rows per block, activation rows per group and
// grid size, by weight type, activation type and the product's shape. Included by matmul_gemv.cu
// and matmul_gemv_q8.cu.
#pragma once

#include "gemv_stream.cuh"

namespace gl::cuda::mm {

// Weight rows per block at one activation row that a quantized type's traits ask for (kGemvRows),
// else 1.
template <DType WT>
constexpr int gemv_rows_of() {
  if constexpr (requires { QuantTraits<WT>::kGemvRows; }) {
    return QuantTraits<WT>::kGemvRows;
  } else {
    return 1;
  }
}

// Grid sizes the launches below choose rows per block by: under kFewBlocks (2 per SM on the H200)
// fewer rows per block spread a product over more SMs; int8 GEMVs shrink their rows per block until
// the grid has kManyBlocks (see launch_single).
inline constexpr int64_t kFewBlocks = 264;
inline constexpr int64_t kManyBlocks = 2048;

// A pair (PairRows): R / 2 rows of each matrix a block, R as launch_single() takes it for one
// matrix but at least 2: a block holds about the registers of an unpaired one, and the grid has
// the blocks of both launches.
template <DType WT, int M, class Act, class Rows>
void launch_pair(const Ctx& ctx, const WDesc& w, const Act& x, const Rows& rows) {
  const NoEpilogue epi{};
  if constexpr (std::is_same_v<Act, Q8Act>) {
    if constexpr (M <= 4 && kStageable<WT> && std::is_same_v<Rows, PairRows<MulMatRows>>)
      if (stage_fits<WT>(w, rows)) return launch_staged<WT, M>(ctx, w, rows, epi);
    if (ceil_div<int64_t>(w.n, 2) * rows.count() >= kManyBlocks) return launch_rows<WT, M, 4>(ctx, w, x, rows, epi);
    launch_rows<WT, M, 2>(ctx, w, x, rows, epi);
  } else if constexpr (is_weight_only_quant(WT)) {
    launch_rows<WT, M, (gemv_rows_of<WT>() > 2 ? gemv_rows_of<WT>() : 2)>(ctx, w, x, rows, epi);
  } else {
    constexpr int R = M >= 2 ? kRowsPerBlock / 2 : kRowsPerBlock;
    if (ceil_div<int64_t>(w.n, R / 2) * rows.count() < kFewBlocks) return launch_rows<WT, M, 2>(ctx, w, x, rows, epi);
    launch_rows<WT, M, R>(ctx, w, x, rows, epi);
  }
}

// One product: the weight rows per block by type, activation rows and grid size. Narrow products
// (the 32-row GDN gate projections) get one weight row per block, so that more than a handful of
// SMs stream them. (Four rows for N <= 4096 was measured too: no change.)
template <DType WT, int M, class Act, class Rows, class Epi>
void launch_single(const Ctx& ctx, const WDesc& w, const Act& x, const Rows& rows, const Epi& epi) {
  // Several activation rows (verify) multiply the accumulators: fewer weight rows per block keep
  // the registers, and so the resident blocks, near the one-row kernel's. Measured on the H200, 9B
  // BF16 forced spec: 4 rows for M >= 2 gave spec 3 351 vs 326 tok/s (verify 1.59x vs 1.73x a
  // decode step) and spec 1 258 vs 244; 2 rows for M = 4 gave 323.
  constexpr int R = M >= 2 ? kRowsPerBlock / 2 : kRowsPerBlock;
  // The weight-only quantized types: the rows their traits ask for (kGemvRows), else one, at
  // every activation row count: each activation load then feeds that many weight rows. Measured
  // on the H200, 9B Q4_K_M, a verify of 4 rows against a decode step: 3.5x at one weight row per
  // block (the activation reads through L1 outweigh the weights 28 to 1), 2.5x at two on the H100.
  // (Only the row counts used are instantiated: the other branch is discarded.)
  // Int8 activations cost little to re-read, so the rows per block shrink until the grid has
  // kManyBlocks: ncu showed a 4096 x 4096 Q4_K GEMV at 24% occupancy with 1024 blocks of 64 threads.
  // Of those, the most rows whose grid fills its last wave about as well (wave_fill): ncu on the
  // H100 had a 4096 x 8192 Q4_K GEMV's 2,048 blocks of 4 rows (72 registers, 14 blocks per SM) in
  // 1.11 waves.
  if constexpr (std::is_same_v<Act, Q8Act>) {
    // Staged in shared memory where the rows allow (gemv_stream.cuh). Measured on the H200 in one
    // call (s25), 9B Q4_K_M against the kernels below: decode 335.2 vs 313.4 tok/s, spec 3 forced
    // 710 vs 582; 9B Q8_0 decode 269 vs 241.
    if constexpr (M <= 4 && kStageable<WT> && std::is_same_v<Rows, MulMatRows>)
      if (stage_fits<WT>(w, rows)) return launch_staged<WT, M>(ctx, w, rows, epi);
    const int threads = gemv_block_threads<WT, Act>(w.k);
    const int64_t b4 = ceil_div<int64_t>(w.n, 4) * rows.count(), b2 = ceil_div<int64_t>(w.n, 2) * rows.count();
    const double f4 = wave_fill(b4, gemv_slots<WT, M, 4, Act, Rows, Epi>(ctx, threads));
    const double f2 = wave_fill(b2, gemv_slots<WT, M, 2, Act, Rows, Epi>(ctx, threads));
    if (b4 >= kManyBlocks && f4 >= f2 - 0.05) return launch_rows<WT, M, 4>(ctx, w, x, rows, epi);
    if (b2 >= kManyBlocks) return launch_rows<WT, M, 2>(ctx, w, x, rows, epi);
    launch_rows<WT, M, 1>(ctx, w, x, rows, epi);
  } else if constexpr (is_weight_only_quant(WT)) {
    constexpr int kQ = gemv_rows_of<WT>();
    constexpr int RQ = kQ;
    if constexpr (RQ > 1)
      if (ceil_div<int64_t>(w.n, RQ) * rows.count() >= kFewBlocks) return launch_rows<WT, M, RQ>(ctx, w, x, rows, epi);
    launch_rows<WT, M, 1>(ctx, w, x, rows, epi);
  } else {
    if (ceil_div<int64_t>(w.n, R) * rows.count() < kFewBlocks) return launch_rows<WT, M, 1>(ctx, w, x, rows, epi);
    launch_rows<WT, M, R>(ctx, w, x, rows, epi);
  }
}

// The launch of one product or a pair.
template <DType WT, int M, class Act, class Rows, class Epi>
void launch(const Ctx& ctx, const WDesc& w, const Act& x, const Rows& rows, const Epi& epi) {
  if constexpr (kTwin<Rows>) {  // narrow products: a weight row per block, as launch_single gives them
    launch_rows<WT, M, 1>(ctx, w, x, rows, epi);
  } else if constexpr (kPaired<Rows>) {
    launch_pair<WT, M>(ctx, w, x, rows);
  } else {
    launch_single<WT, M>(ctx, w, x, rows, epi);
  }
}

// ---- int8 activations (matmul_gemv_q8.cu) --------------------------------------------------------

// The int8 GEMV over rows whose activation pointers address quantize_rows_q8's output; m: the
// activation rows per group (1, 2, 4 or kGemvMaxRows).
template <class Rows, class Epi>
void launch_q8(const Ctx& ctx, DType wt, int m, const WDesc& w, const Rows& rows, const Epi& epi);

}  // namespace gl::cuda::mm
