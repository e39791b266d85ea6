// matmul.h - internals of the CPU matrix products, shared by matmul.cpp and the tests.
//
//   const float* w[2] = {w0, w1};            // weight rows, K floats each
//   const float* x[3] = {x0, x1, x2};        // activation rows, K floats each
//   float* out[3] = {o0, o1, o2};
//   gl::cpu::dot_rows(w, 2, x, 3, K, out, 0); // out[j][i] = dot(w[i], x[j])
//
// The entries (kernels.h) convert weight rows to float once per tile and call
// dot_rows, or read them in place with dot_rows_stored for a few activation
// rows; gemm serves the chunked delta rule. The *_reference functions are plain
// double-accumulating loops used to test the entries.
#pragma once

#include <cstdint>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Plain loops over ne/nb with double accumulation (test oracles, slow).
void mul_mat_reference(Tensor& dst);
void mul_mat_id_reference(Tensor& dst);

// Converts n contiguous elements of a float or Q8_0 row to float. Bit-identical
// to gl::to_float; vectorised where the target allows.
void row_to_f32(DType type, const void* src, float* dst, int64_t n);

// The register tile of dot_rows: weight rows x activation rows computed together. Row
// counts that are multiples of these waste no work.
struct DotTileShape {
  int w_rows, x_rows;
};
DotTileShape dot_tile_shape();

// out[j][out_off + i] = sum_k w[i][k] * x[j][k] for i < nw, j < nx, accumulated
// in float with several independent partial sums (matmul_fast.cpp).
void dot_rows(const float* const* w, int nw, const float* const* x, int64_t nx, int64_t k, float* const* out,
              int64_t out_off);
// dot_rows over dense weight rows in their stored type (f32, f16, bf16, q8_0),
// converted in registers; the same sums as row_to_f32 followed by dot_rows.
void dot_rows_stored(DType type, const void* const* w, int nw, const float* const* x, int64_t nx, int64_t k,
                     float* const* out, int64_t out_off);

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
