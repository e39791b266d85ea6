// dtype_kernels.h - the CPU's kernels per weight dtype: one table row per DType.
//
//   const CpuTypeKernels& k = cpu_type_kernels(w.type);
//   if (!k.dot_rows) ...                           // no kernel: supports() refused the node
//   k.row_to_f32(row, buf, K);                     // one weight row -> floats
//   k.dot_rows(w_rows, nw, x_rows, nx, K, out, 0); // x rows stored as k.act_type
//   const CpuTypeKernels& f = cpu_type_kernels(w.type, Precision::FAST);
//   f.quantize_act(x_row, buf, K);                 // f.act_row_bytes(K) bytes of int8 blocks
//
// matmul.cpp selects kernels here and nowhere else; the kernels themselves are templates on the
// type (dot_tiles.h). A row whose dot_rows is null has no matrix product on the CPU, and
// supports_node() says so, so the scheduler never hands such a node to this backend.
// Under Precision::FAST, Q4_0, Q8_0, Q4_K, Q5_K and Q6_K weights have int8 rows (quants/int8_dot.h)
// and BF16 weights BF16 rows (bf16_fast.h): each activation row is quantized on its own
// (quantize_act), so a row's result does not depend on the other rows of the product; the other
// types keep their exact row.
#pragma once

#include <cstdint>

#include "ggml-lite/backend.h"
#include "ggml-lite/tensor.h"

namespace gl::cpu {

// n weights of a dense row -> floats, bit-identical to dtype_traits(t).to_float.
using RowToF32Fn = void (*)(const void* src, float* dst, int64_t n);
// out[j][out_off + i] = sum_k w[i][k] * x[j][k] for i < nw, j < nx: w rows dense in the weight
// type, x rows dense in the row's act_type; float accumulation in several partial sums.
using DotRowsFn = void (*)(const void* const* w, int nw, const void* const* x, int64_t nx, int64_t k, float* const* out,
                           int64_t out_off);
// One F32 activation row of k elements -> the int8 blocks dot_rows reads (act_row_bytes(k) bytes).
using QuantizeActFn = void (*)(const float* x, void* dst, int64_t k);
using ActRowBytesFn = int64_t (*)(int64_t k);

struct CpuTypeKernels {
  RowToF32Fn row_to_f32 = nullptr;       // vectorised row conversion (null: none)
  DotRowsFn dot_rows = nullptr;          // weight rows read in place (null: no matrix product)
  DType act_type = DType::F32;           // what dot_rows reads; dtype_traits(t).vec_dot_type
  QuantizeActFn quantize_act = nullptr;  // non-null: dot_rows reads these blocks, not act_type rows
  ActRowBytesFn act_row_bytes = nullptr;
};

// The exact kernels of t, or under FAST its int8 kernels where it has them.
const CpuTypeKernels& cpu_type_kernels(DType t, Precision p = Precision::EXACT);

// Whether the CPU has kernels for node (the backend's supports()): matrix products need a
// dot_rows for their weight type; every other op has a reference for every dtype its builder
// accepts.
bool supports_node(const Tensor& node);

}  // namespace gl::cpu
