// gemm.cpp - small dense products C (+)= A B for the chunked delta rule (ssm_chunked.cpp).
//
// Broadcasts one element of A against vectors along a row of B, so the
// contracted dimension may be short (a 64-token chunk) without paying a
// horizontal reduction per output, as the dot-product tiles of mul_mat would.
// A tile of kGemmRows x kGemmVecs vectors of C stays in registers over all k.
#include <algorithm>

#include "matmul.h"
#include "simd.h"

namespace gl::cpu {
namespace {

using simd::kLanes;
using simd::Vec;

// Register tiles (rows x vectors of C): wide ones while n allows, else narrow ones with more rows,
// so each broadcast element of A still feeds several FMAs (the delta rule's n is often 32).
#if defined(__AVX512F__)
constexpr int kGemmRows = 4, kGemmVecs = 4;
constexpr int kNarrowRows = 8, kNarrowVecs = 2;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kGemmRows = 4, kGemmVecs = 2;
constexpr int kNarrowRows = 4, kNarrowVecs = 2;
#else
constexpr int kGemmRows = 4, kGemmVecs = 1;
constexpr int kNarrowRows = 4, kNarrowVecs = 1;
#endif

// Rows i0 .. i0+MR-1, columns c0 .. c0+NV*kLanes-1 of C.
template <int MR, int NV>
void gemm_tile(const GemmArgs& g, int64_t i0, int64_t c0) {
  Vec acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      acc[i][v] = g.accumulate ? simd::vload(g.c + (i0 + i) * g.ldc + c0 + v * kLanes) : simd::vzero();
  for (int64_t kk = 0; kk < g.k; ++kk) {
    Vec bv[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) bv[v] = simd::vload(g.b + kk * g.ldb + c0 + v * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const Vec av = simd::vset1(g.a[(i0 + i) * g.lda + kk]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[i][v] = simd::vfma(av, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) simd::vstore(g.c + (i0 + i) * g.ldc + c0 + v * kLanes, acc[i][v]);
}

// All full-vector columns of rows i0 .. i0+MR-1 (tiles of NV vectors, then single vectors), then
// the last n % kLanes columns one by one.
template <int MR, int NV>
void gemm_rows(const GemmArgs& g, int64_t i0) {
  constexpr int64_t kWide = NV * kLanes;
  int64_t c0 = 0;
  for (; c0 + kWide <= g.n; c0 += kWide) gemm_tile<MR, NV>(g, i0, c0);
  for (; c0 + kLanes <= g.n; c0 += kLanes) gemm_tile<MR, 1>(g, i0, c0);
  for (int i = 0; i < MR; ++i)
    for (int64_t c = c0; c < g.n; ++c) {
      float s = g.accumulate ? g.c[(i0 + i) * g.ldc + c] : 0.0f;
      for (int64_t kk = 0; kk < g.k; ++kk) s += g.a[(i0 + i) * g.lda + kk] * g.b[kk * g.ldb + c];
      g.c[(i0 + i) * g.ldc + c] = s;
    }
}

// gemm_rows for `rows` (1 .. MR) rows.
template <int MR, int NV>
void gemm_rows_n(int rows, const GemmArgs& g, int64_t i0) {
  if constexpr (MR > 1) {
    if (rows < MR) return gemm_rows_n<MR - 1, NV>(rows, g, i0);
  }
  gemm_rows<MR, NV>(g, i0);
}

template <int MR, int NV>
void gemm_blocks(const GemmArgs& g) {
  for (int64_t i0 = 0; i0 < g.m; i0 += MR)
    gemm_rows_n<MR, NV>(static_cast<int>(std::min<int64_t>(MR, g.m - i0)), g, i0);
}

}  // namespace

void gemm(const GemmArgs& g) {
  if (g.n >= kGemmVecs * kLanes) return gemm_blocks<kGemmRows, kGemmVecs>(g);
  gemm_blocks<kNarrowRows, kNarrowVecs>(g);
}

}  // namespace gl::cpu
