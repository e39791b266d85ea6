// matmul.h - internals of the CPU matrix products, shared by matmul.cpp and the tests.
//
//   gl::cpu::DotTileShape s = gl::cpu::dot_tile_shape();  // weight rows x activation rows per tile
//   gl::cpu::gemm({.m = 4, .n = 64, .k = 64, .a = a, .lda = 64, .b = b, .ldb = 64, .c = c, .ldc = 64});
//
// The entries (kernels.h) pick their per-type dot products and row conversions from
// dtype_kernels.h; gemm serves the chunked delta rule. The *_reference functions are plain
// double-accumulating loops used to test the entries.
#pragma once

#include <cstdint>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Plain loops over ne/nb with double accumulation (test oracles, slow).
void mul_mat_reference(Tensor& dst);
void mul_mat_id_reference(Tensor& dst);

// The register tile of the dot products (dtype_kernels.h): weight rows x activation rows computed together. Row
// counts that are multiples of these waste no work.
struct DotTileShape {
  int w_rows, x_rows;
};
DotTileShape dot_tile_shape();
// The tile of products whose weight rows were converted to F32 first (blocks of more than
// dot_tile_shape().x_rows activation rows): weight tiles are best a multiple of its w_rows.
DotTileShape slab_tile_shape();

// C (+)= A B for small row-major float matrices: A [m][k], B [k][n], C [m][n] with
// leading dimensions (row strides in floats) (gemm.cpp). Broadcasts elements of
// A against vectors of B rows, so it suits short k (unlike dot_rows).
struct GemmArgs {
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  bool accumulate;  // false: C = A B
};
void gemm(const GemmArgs& g);

}  // namespace gl::cpu
