// layout.cu - ops that move and convert elements: GET_ROWS, SET_ROWS, CONCAT, CONT and CPY.
//
// Why element-wise through strides: every op here is "element of one tensor -> element of
// another, maybe in another dtype", and the sources are often views (a strided cache window,
// a transposed activation), so kernels address elements by byte strides instead of requiring
// contiguous inputs. Equal dtypes copy raw bits (I32 values and NaN payloads survive, as with the
// CPU's memcpy); different ones go through float with the CPU's rounding. A quantized type is
// handled a block at a time through its traits (dtype_table.cuh): dequantized on load, and
// quantized by one thread per destination block. GET_ROWS of a quantized table (embeddings, any
// llama.cpp weight type) has its own kernel per type, so the plain kernels stay lean.
// CONT/CPY pair elements in row-major flat order, so a [32, 6] source fills a [64, 3] view.
// A row id outside the target tensor is a programmer error, as on the CPU (which aborts): the
// kernel prints it and traps, and the backend reports the failed node.
#include <cstdio>

#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"

namespace gl::cuda {
namespace {

__device__ __noinline__ void bad_row_id(const char* op, int32_t id, int64_t n_rows) {
  printf("[%s] row id %d is outside [0, %lld)\n", op, id, static_cast<long long>(n_rows));
  __trap();
}

__device__ __forceinline__ int32_t id_at(const TensorArg& ids, int64_t i, int64_t b2, int64_t b3) {
  return *reinterpret_cast<const int32_t*>(ids.data + i * ids.nb[0] + b2 * ids.nb[1] + b3 * ids.nb[2]);
}

// ---- kernels -----------------------------------------------------------------

// d[:, i, b2, b3] = a[:, ids[i, b2, b3], b2, b3], converted to d.type (a of a plain type).
__global__ void get_rows_kernel(TensorArg a, TensorArg ids, TensorArg d, int64_t rows) {
  pdl_trigger();
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i, b2, b3;
    unravel_row(d.ne, r, i, b2, b3);
    const int32_t id = id_at(ids, i, b2, b3);
    if (id < 0 || id >= a.ne[1]) bad_row_id("get_rows", id, a.ne[1]);
    const char* ra = row_ptr(a, id, b2, b3);
    char* rd = row_ptr(d, i, b2, b3);
    for (int64_t i0 = first_col(); i0 < d.ne[0]; i0 += col_stride())
      convert_plain(a.type, ra + i0 * a.nb[0], d.type, rd + i0 * d.nb[0]);
  }
}

// The same for a of quantized type Q (adjacent blocks): each element dequantized through Q's traits,
// exactly as the reference dequantizer computes it.
template <class Q>
__global__ void get_rows_quant_kernel(TensorArg a, TensorArg ids, TensorArg d, int64_t rows) {
  pdl_trigger();
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i, b2, b3;
    unravel_row(d.ne, r, i, b2, b3);
    const int32_t id = id_at(ids, i, b2, b3);
    if (id < 0 || id >= a.ne[1]) bad_row_id("get_rows", id, a.ne[1]);
    const char* ra = row_ptr(a, id, b2, b3);
    char* rd = row_ptr(d, i, b2, b3);
    for (int64_t i0 = first_col(); i0 < d.ne[0]; i0 += col_stride()) {
      const float v = Q::elem(ra + (i0 / Q::kBlock) * int64_t{Q::kBlockBytes}, static_cast<int>(i0 % Q::kBlock));
      store_plain(d.type, rd + i0 * d.nb[0], v);
    }
  }
}

// dst[:, ids[i, b2, b3], b2, b3] = src[:, i, b2, b3]. With repeated ids in a batch the last row
// writing an id wins (the CPU's rule), so the result does not depend on scheduling.
__global__ void set_rows_kernel(TensorArg dst, TensorArg src, TensorArg ids, int64_t rows) {
  pdl_trigger();
  __shared__ int scratch[32];
  const int64_t n = src.ne[1];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;  // a row group past the end still joins the reduction
    int64_t i = 0, b2 = 0, b3 = 0;
    if (live) unravel_row(src.ne, r, i, b2, b3);
    const int32_t id = live ? id_at(ids, i, b2, b3) : 0;
    if (live && threadIdx.x == 0 && (id < 0 || id >= dst.ne[1])) bad_row_id("set_rows", id, dst.ne[1]);
    int later = 0;
    for (int64_t j = i + 1 + threadIdx.x; j < (live ? n : 0); j += blockDim.x) later |= id_at(ids, j, b2, b3) == id;
    later = group_reduce(later, MaxOp{}, scratch);
    if (!live || later) continue;
    const char* rs = row_ptr(src, i, b2, b3);
    char* rd = row_ptr(dst, id, b2, b3);
    if (is_quant_type(dst.type)) {
      with_quant(dst.type, [&](auto q) {
        using Q = decltype(q);
        for (int64_t blk = threadIdx.x; blk < dst.ne[0] / Q::kBlock; blk += blockDim.x) {
          float v[Q::kBlock];
          for (int k = 0; k < Q::kBlock; ++k) v[k] = load_plain(src.type, rs + (blk * Q::kBlock + k) * src.nb[0]);
          Q::quantize(v, rd + blk * dst.nb[0]);
        }
      });
    } else {
      for (int64_t i0 = threadIdx.x; i0 < dst.ne[0]; i0 += blockDim.x)
        convert_plain(src.type, rs + i0 * src.nb[0], dst.type, rd + i0 * dst.nb[0]);
    }
  }
}

// a and b joined along dim (a_len = a.ne[dim]); all three share one plain dtype.
__global__ void concat_kernel(TensorArg a, TensorArg b, TensorArg d, int64_t rows, int dim, int64_t a_len) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t i1, i2, i3;
    unravel_row(d.ne, r, i1, i2, i3);
    char* rd = row_ptr(d, i1, i2, i3);
    if (dim == 0) {
      const char* ra = row_ptr(a, i1, i2, i3);
      const char* rb = row_ptr(b, i1, i2, i3);
      for (int64_t i0 = first_col(); i0 < d.ne[0]; i0 += col_stride()) {
        const char* from = i0 < a_len ? ra + i0 * a.nb[0] : rb + (i0 - a_len) * b.nb[0];
        convert_plain(d.type, from, d.type, rd + i0 * d.nb[0]);
      }
      continue;
    }
    const int64_t along = dim == 1 ? i1 : (dim == 2 ? i2 : i3);
    const bool from_a = along < a_len;
    if (!from_a) {
      i1 -= dim == 1 ? a_len : 0;
      i2 -= dim == 2 ? a_len : 0;
      i3 -= dim == 3 ? a_len : 0;
    }
    const char* rs = from_a ? row_ptr(a, i1, i2, i3) : row_ptr(b, i1, i2, i3);
    const int64_t snb0 = from_a ? a.nb[0] : b.nb[0];
    for (int64_t i0 = first_col(); i0 < d.ne[0]; i0 += col_stride())
      convert_plain(d.type, rs + i0 * snb0, d.type, rd + i0 * d.nb[0]);
  }
}

// Address of element f (row-major flat index) of t.
__device__ __forceinline__ const char* flat_elem(const TensorArg& t, int64_t f) {
  int64_t i0, i1, i2, i3;
  unravel(t.ne, f, i0, i1, i2, i3);
  return row_ptr(t, i1, i2, i3) + i0 * t.nb[0];
}

// to[f] = from[f] in flat order, into a plain destination. A quantized source keeps its row length.
__global__ void copy_kernel(TensorArg from, TensorArg to, int64_t rows) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const int64_t n = to.ne[0];
  const bool same_rows = from.ne[0] == n;
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t j1, j2, j3;
    unravel_row(to.ne, r, j1, j2, j3);
    char* rt = row_ptr(to, j1, j2, j3);
    if (!same_rows) {  // rows of different lengths: find every source element by its flat index
      for (int64_t i0 = first_col(); i0 < n; i0 += col_stride())
        convert_plain(from.type, flat_elem(from, r * n + i0), to.type, rt + i0 * to.nb[0]);
      continue;
    }
    int64_t i1, i2, i3;
    unravel_row(from.ne, r, i1, i2, i3);
    const char* rf = row_ptr(from, i1, i2, i3);
    for (int64_t i0 = first_col(); i0 < n; i0 += col_stride()) {
      if (is_quant_type(from.type)) {
        store_plain(to.type, rt + i0 * to.nb[0], load_elem(from, rf, i0));
      } else {
        convert_plain(from.type, rf + i0 * from.nb[0], to.type, rt + i0 * to.nb[0]);
      }
    }
  }
}

// to[f] = from[f] in flat order into a destination of quantized type Q: one thread per block,
// which quantizes a plain source or copies the block bits of a source of the same type (same row
// length; the builders allow no other quantized source).
template <class Q>
__global__ void copy_to_quant_kernel(TensorArg from, TensorArg to, int64_t rows) {
  pdl_trigger();
  const int64_t n = to.ne[0];
  const bool same_rows = from.ne[0] == n;
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t j1, j2, j3, i1 = 0, i2 = 0, i3 = 0;
    unravel_row(to.ne, r, j1, j2, j3);
    if (same_rows) unravel_row(from.ne, r, i1, i2, i3);
    const char* rf = row_ptr(from, i1, i2, i3);
    char* rt = row_ptr(to, j1, j2, j3);
    for (int64_t blk = threadIdx.x; blk < n / Q::kBlock; blk += blockDim.x) {
      if (from.type == Q::kType) {
        copy_block<Q>(rf + blk * from.nb[0], rt + blk * to.nb[0]);
        continue;
      }
      float v[Q::kBlock];
      for (int k = 0; k < Q::kBlock; ++k) {
        const int64_t i0 = blk * Q::kBlock + k;
        v[k] = load_plain(from.type, same_rows ? rf + i0 * from.nb[0] : flat_elem(from, r * n + i0));
      }
      Q::quantize(v, rt + blk * to.nb[0]);
    }
  }
}

// Quantized rows with adjacent blocks only; a quantized source keeps its row length and is either
// dequantized into a plain destination or copied into one of its own type.
bool plain_layout_ok(const Tensor& from, const Tensor& to) {
  const bool q_from = dtype_traits(from.type).is_quant, q_to = dtype_traits(to.type).is_quant;
  if (!cuda_type_kernels(from.type).load || !cuda_type_kernels(to.type).store) return false;
  if (q_from && (from.ne[0] != to.ne[0] || (q_to && from.type != to.type))) return false;
  return dense_quant_rows(from) && dense_quant_rows(to);
}

// A dense copy within one dtype (GDN states and conv windows back into their caches every step)
// is a plain device memcpy, which runs at copy bandwidth and is captured into graphs like a kernel.
bool copy_bytes(const Ctx& ctx, const Tensor& from, const Tensor& to) {
  if (from.type != to.type || !is_contiguous(from) || !is_contiguous(to)) return false;
  const size_t n = nbytes(from);
  const char* f = static_cast<const char*>(from.data);
  char* t = static_cast<char*>(to.data);
  if (f == t) return true;
  if (f < t + n && t < f + n) return false;  // overlapping ranges: the kernel reads before it writes
  GL_CUDA_CHECK(cudaMemcpyAsync(t, f, n, cudaMemcpyDeviceToDevice, ctx.stream));
  return true;
}

}  // namespace

// ---- entries -----------------------------------------------------------------

void get_rows(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::GET_ROWS, "cuda get_rows: not a GET_ROWS node");
  const Tensor& a = *dst.src[0];
  const Tensor& ids = *dst.src[1];
  GL_ASSERT(ids.type == DType::I32 && ids.ne[0] == dst.ne[1] && ids.ne[1] == a.ne[2] && ids.ne[2] == a.ne[3],
            "cuda get_rows: ids must be I32 [n, B2, B3]");
  GL_ASSERT(dst.ne[0] == a.ne[0] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3] && dense_quant_rows(a),
            "cuda get_rows: dst shape mismatch or strided quantized rows");
  const RowLaunch l = elem_launch(dst.ne[0], nrows(dst));
  if (l.empty()) return;
  if (dtype_traits(a.type).is_quant) {
    check_quant_alignment(a);
    with_weight_quant_host(a.type, [&](auto q) {
      using Q = decltype(q);
      get_rows_quant_kernel<Q><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(ids), arg(dst), l.rows);
    });
    return;
  }
  get_rows_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(ids), arg(dst), l.rows);
}

// Writes through src[0] (the destination tensor); the node is a view of it.
void set_rows(const Ctx& ctx, Tensor& node) {
  GL_ASSERT(node.op == Op::SET_ROWS, "cuda set_rows: not a SET_ROWS node");
  const Tensor& dst = *node.src[0];
  const Tensor& src = *node.src[1];
  const Tensor& ids = *node.src[2];
  GL_ASSERT(ids.type == DType::I32 && ids.ne[0] == src.ne[1] && ids.ne[1] == src.ne[2] && ids.ne[2] == src.ne[3],
            "cuda set_rows: ids must be I32 [n, B2, B3] of src");
  GL_ASSERT(src.ne[0] == dst.ne[0] && src.ne[2] == dst.ne[2] && src.ne[3] == dst.ne[3] && dense_quant_rows(dst) &&
                is_plain_type(src.type),
            "cuda set_rows: src and dst differ in row length or batch dims, or strided quantized rows");
  const int64_t per_row = dst.ne[0] / dtype_traits(dst.type).block_size;  // a thread per block
  const RowLaunch l = row_launch(per_row, nrows(src));
  if (l.empty()) return;
  set_rows_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(dst), arg(src), arg(ids), l.rows);
}

void concat(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::CONCAT, "cuda concat: not a CONCAT node");
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  const int dim = dst.p<ConcatParams>().dim;
  GL_ASSERT(a.type == b.type && a.type == dst.type && is_plain_type(a.type) && dim >= 0 && dim < kMaxDims &&
                dst.ne[dim] == a.ne[dim] + b.ne[dim],
            "cuda concat: a, b and dst must share a plain dtype and add up along dim");
  const RowLaunch l = elem_launch(dst.ne[0], nrows(dst));
  if (l.empty()) return;
  concat_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(b), arg(dst), l.rows, dim, a.ne[dim]);
}

// CONT: src[0] -> dst (dst.type, dst's layout). CPY: src[0] -> src[1]'s memory, flat order to flat order.
void copy(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::CONT || dst.op == Op::CPY, "cuda copy: not a CONT/CPY node");
  const Tensor& from = *dst.src[0];
  const Tensor& to = dst.op == Op::CONT ? dst : *dst.src[1];
  GL_ASSERT(nelements(from) == nelements(to), "cuda copy: element counts differ");
  GL_ASSERT(plain_layout_ok(from, to), "cuda copy: strided quantized rows, or a quantized source changing row length");
  if (copy_bytes(ctx, from, to)) return;
  if (dtype_traits(to.type).is_quant) {
    const RowLaunch l = row_launch(to.ne[0] / dtype_traits(to.type).block_size, nrows(to));
    if (l.empty()) return;
    with_quant_host(to.type, [&](auto q) {
      copy_to_quant_kernel<decltype(q)><<<l.grid, l.block, 0, ctx.stream>>>(arg(from), arg(to), l.rows);
    });
    return;
  }
  const RowLaunch l = elem_launch(to.ne[0], nrows(to));
  if (l.empty()) return;
  copy_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(from), arg(to), l.rows);
}

// Every dtype pair the builders allow and dtype_table.cuh has kernels for; quantized rows only with
// adjacent blocks (the CPU asserts the same).
bool supports_layout(const Tensor& node) {
  const Tensor* s0 = node.src[0];
  const Tensor* s1 = node.src[1];
  const Tensor* s2 = node.src[2];
  const Op op = node.op;
  if (op == Op::GET_ROWS)
    return s0 && s1 && s1->type == DType::I32 && cuda_type_kernels(s0->type).get_rows && dense_quant_rows(*s0) &&
           is_plain_type(node.type);
  if (op == Op::SET_ROWS)
    return s0 && s1 && s2 && s2->type == DType::I32 && is_plain_type(s1->type) && cuda_type_kernels(s0->type).store &&
           dense_quant_rows(*s0);
  if (op == Op::CONCAT) return s0 && s1 && s0->type == s1->type && s0->type == node.type && is_plain_type(node.type);
  if (op == Op::CONT) return s0 && plain_layout_ok(*s0, node);
  if (op == Op::CPY) return s0 && s1 && plain_layout_ok(*s0, *s1);
  return false;
}

}  // namespace gl::cuda
