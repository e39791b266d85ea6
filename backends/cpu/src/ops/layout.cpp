// layout.cpp - CPU reference for ops that move and convert elements: GET_ROWS,
// SET_ROWS, CONCAT, CONT and CPY.
//
// Every op here reduces to "convert n elements from a strided row of one tensor
// into a strided row of another", done by convert_strided: dense rows go through
// gl::convert_row (bit-exact with ggml, including Q8_0), strided ones are
// gathered into / scattered out of per-thread scratch. Values never pass through
// float unless the dtypes differ, so I32 -> I32 and Q8_0 -> Q8_0 copy bits.
// Ids are checked before any thread starts, so a bad id aborts with the tensor's
// name instead of writing out of bounds.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ggml-lite/status.h"
#include "kernels.h"
#include "parallel.h"
#include "rows.h"
#include "team.h"

namespace gl::cpu {
namespace {

constexpr int64_t kTile = 16;  // rows gathered together from a strided source (16 f32 = one cache line)

struct Scratch {
  std::vector<char> gather;  // source elements in flat order (CPY across shapes)
  std::vector<char> src;     // dense copy of a strided source row
  std::vector<char> dst;     // dense row before scattering into a strided destination
};

// Row stride of a tensor: whether its row elements (or quant blocks) are adjacent.
bool dense_row(DType t, size_t nb0) { return nb0 == dtype_traits(t).block_bytes; }

template <size_t kEsz>
void strided_copy_fixed(const char* from, size_t from_nb, char* to, size_t to_nb, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(to + i * to_nb, from + i * from_nb, kEsz);
}

// Copies n elements of size esz from stride `from_nb` to stride `to_nb`; a fixed
// size lets the compiler turn each memcpy into one load and store.
void strided_copy(const char* from, size_t from_nb, char* to, size_t to_nb, int64_t n, size_t esz) {
  if (esz == 4) return strided_copy_fixed<4>(from, from_nb, to, to_nb, n);
  if (esz == 2) return strided_copy_fixed<2>(from, from_nb, to, to_nb, n);
  for (int64_t i = 0; i < n; ++i) std::memcpy(to + i * to_nb, from + i * from_nb, esz);
}

// Converts n elements from a row at `src` (type st, element stride snb) to a row
// at `dst` (type dt, stride dnb). Quantized rows must be dense.
void convert_strided(DType st, const char* src, size_t snb, DType dt, char* dst, size_t dnb, int64_t n, Scratch& s) {
  const bool s_dense = dense_row(st, snb);
  const bool d_dense = dense_row(dt, dnb);
  GL_ASSERT((s_dense || !dtype_traits(st).is_quant) && (d_dense || !dtype_traits(dt).is_quant),
            "layout: quantized rows must have adjacent blocks");
  if (!s_dense) {
    const size_t esz = dtype_traits(st).block_bytes;
    s.src.resize(static_cast<size_t>(n) * esz);
    strided_copy(src, snb, s.src.data(), esz, n, esz);
    src = s.src.data();
  }
  if (d_dense) {
    convert_row(st, src, dt, dst, n);
    return;
  }
  const size_t esz = dtype_traits(dt).block_bytes;
  s.dst.resize(static_cast<size_t>(n) * esz);
  convert_row(st, src, dt, s.dst.data(), n);
  strided_copy(s.dst.data(), esz, dst, dnb, n, esz);
}

// Converts row (i1, i2, i3) of `from` into row (j1, j2, j3) of `to`; both have ne[0] elements.
void convert_tensor_row(const Tensor& from, int64_t i1, int64_t i2, int64_t i3, const Tensor& to, int64_t j1,
                        int64_t j2, int64_t j3, Scratch& s) {
  convert_strided(from.type, elem_ptr(from, 0, i1, i2, i3), from.nb[0], to.type, elem_ptr(to, 0, j1, j2, j3), to.nb[0],
                  to.ne[0], s);
}

int32_t id_at(const Tensor& ids, int64_t i, int64_t b2, int64_t b3) {
  return *reinterpret_cast<const int32_t*>(elem_ptr(ids, i, b2, b3, 0));
}

// Aborts naming the tensors when an id of ids [n, B2, B3] is outside [0, n_rows).
void check_ids(const Tensor& node, const Tensor& ids, int64_t n_rows) {
  for (int64_t b3 = 0; b3 < ids.ne[2]; ++b3)
    for (int64_t b2 = 0; b2 < ids.ne[1]; ++b2)
      for (int64_t i = 0; i < ids.ne[0]; ++i) {
        const int32_t id = id_at(ids, i, b2, b3);
        if (id >= 0 && id < n_rows) continue;
        const std::string msg = fmt::format("{} '{}': ids '{}'[{}, {}, {}] = {} is outside [0, {})", op_name(node.op),
                                            node.name, ids.name, i, b2, b3, id, n_rows);
        GL_ASSERT(id >= 0 && id < n_rows, msg.c_str());
      }
}

// For SET_ROWS with repeated ids: keep[i] is false unless i is the last row of its batch
// writing that id, so the result does not depend on thread timing.
std::vector<char> last_writers(const Tensor& ids) {
  const int64_t n = ids.ne[0];
  std::vector<char> keep(static_cast<size_t>(nelements(ids)), 1);
  std::vector<std::pair<int32_t, int64_t>> order(static_cast<size_t>(n));
  for (int64_t b = 0; b < ids.ne[1] * ids.ne[2]; ++b) {
    const int64_t b2 = b % ids.ne[1], b3 = b / ids.ne[1];
    for (int64_t i = 0; i < n; ++i) order[i] = {id_at(ids, i, b2, b3), i};
    std::sort(order.begin(), order.end());
    for (int64_t k = 0; k + 1 < n; ++k)
      if (order[k].first == order[k + 1].first) keep[b * n + order[k].second] = 0;
  }
  return keep;
}

// Gathers n elements of src in row-major flat order starting at flat index k into s.gather.
const char* gather_flat(const Tensor& src, int64_t k, int64_t n, Scratch& s) {
  const size_t esz = dtype_traits(src.type).block_bytes;
  s.gather.resize(static_cast<size_t>(n) * esz);
  for (int64_t done = 0; done < n;) {
    const int64_t f = k + done;
    const int64_t i0 = f % src.ne[0];
    int64_t i1, i2, i3;
    unravel_row(src, f / src.ne[0], i1, i2, i3);
    const int64_t run = std::min(n - done, src.ne[0] - i0);
    strided_copy(elem_ptr(src, i0, i1, i2, i3), src.nb[0], s.gather.data() + done * esz, esz, run, esz);
    done += run;
  }
  return s.gather.data();
}

// Target row r of `to` from the elements of `from` at flat indices [r * n, (r + 1) * n).
void copy_row(const Tensor& from, const Tensor& to, int64_t r, Scratch& s) {
  int64_t j1, j2, j3;
  unravel_row(to, r, j1, j2, j3);
  if (from.ne[0] == to.ne[0]) {
    int64_t i1, i2, i3;
    unravel_row(from, r, i1, i2, i3);
    convert_tensor_row(from, i1, i2, i3, to, j1, j2, j3, s);
    return;
  }
  const char* flat = gather_flat(from, r * to.ne[0], to.ne[0], s);
  convert_strided(from.type, flat, dtype_traits(from.type).block_bytes, to.type, elem_ptr(to, 0, j1, j2, j3), to.nb[0],
                  to.ne[0], s);
}

// tile[b * n + i0] = element i0 of the row at base[b], for nr rows of n elements of kEsz bytes.
template <size_t kEsz>
void gather_tile(const char* const* base, int64_t nr, size_t nb0, int64_t n, char* tile) {
  for (int64_t i0 = 0; i0 < n; ++i0)
    for (int64_t b = 0; b < nr; ++b) std::memcpy(tile + (b * n + i0) * kEsz, base[b] + i0 * nb0, kEsz);
}
void gather_tile(const char* const* base, int64_t nr, size_t nb0, int64_t n, char* tile, size_t esz) {
  if (esz == 4) return gather_tile<4>(base, nr, nb0, n, tile);
  if (esz == 2) return gather_tile<2>(base, nr, nb0, n, tile);
  GL_ASSERT(false, "copy: tiled gather expects 2- or 4-byte elements");
}

// Rows [r0, r0 + nr) of `to` from the same rows of `from` (equal row length, strided source rows).
// Element i0 of all nr rows is read together, so a transposed source is read along its contiguous
// dimension instead of one cache line (and often one page) per element.
void copy_rows_tiled(const Tensor& from, const Tensor& to, int64_t r0, int64_t nr, Scratch& s) {
  GL_ASSERT(nr <= kTile, "copy: tile too large");
  const int64_t n = from.ne[0];
  const size_t esz = dtype_traits(from.type).block_bytes;
  const char* base[kTile];
  for (int64_t b = 0; b < nr; ++b) {
    int64_t i1, i2, i3;
    unravel_row(from, r0 + b, i1, i2, i3);
    base[b] = elem_ptr(from, 0, i1, i2, i3);
  }
  s.gather.resize(static_cast<size_t>(nr * n) * esz);
  char* tile = s.gather.data();
  gather_tile(base, nr, from.nb[0], n, tile, esz);
  for (int64_t b = 0; b < nr; ++b) {
    int64_t j1, j2, j3;
    unravel_row(to, r0 + b, j1, j2, j3);
    convert_strided(from.type, tile + b * n * esz, esz, to.type, elem_ptr(to, 0, j1, j2, j3), to.nb[0], n, s);
  }
}

// Fills `to` (any strides, to.type) with the elements of `from` in row-major order.
void copy_flat(const Tensor& from, const Tensor& to) {
  GL_ASSERT(nelements(from) == nelements(to), "copy: element counts differ");
  if (from.type == to.type && is_contiguous(from) && is_contiguous(to)) {  // the same bytes (a state into its cache)
    if (from.data != to.data) std::memmove(to.data, from.data, nbytes(to));
    return;
  }
  const bool same_rows = from.ne[0] == to.ne[0];
  GL_ASSERT(same_rows || !dtype_traits(from.type).is_quant, "copy: a quantized source must keep its row length");
  const bool tiled = same_rows && !dtype_traits(from.type).is_quant && !dense_row(from.type, from.nb[0]);
  const int64_t step = tiled ? kTile : 1;
  const int64_t rows = nrows(to);
  const int64_t n_steps = (rows + step - 1) / step;
  parallel_for(n_steps, nelements(to) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    Scratch s;
    for (int64_t t = r_begin; t < r_end; ++t) {
      const int64_t r0 = t * step;
      if (tiled) {
        copy_rows_tiled(from, to, r0, std::min(step, rows - r0), s);
      } else {
        copy_row(from, to, r0, s);
      }
    }
  });
}

}  // namespace

// out[:, i, b2, b3] = a[:, ids[i, b2, b3], b2, b3], converted to dst.type.
void get_rows(Tensor& dst) {
  GL_ASSERT(dst.op == Op::GET_ROWS, "get_rows: not a GET_ROWS node");
  const Tensor& a = *dst.src[0];
  const Tensor& ids = *dst.src[1];
  GL_ASSERT(ids.type == DType::I32 && ids.ne[0] == dst.ne[1] && ids.ne[1] == a.ne[2] && ids.ne[2] == a.ne[3],
            "get_rows: ids must be I32 [n, B2, B3]");
  GL_ASSERT(dst.ne[0] == a.ne[0] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3], "get_rows: dst shape mismatch");
  check_ids(dst, ids, a.ne[1]);
  const int64_t rows = nrows(dst);
  parallel_for(rows, nelements(dst) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    Scratch s;
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i, b2, b3;
      unravel_row(dst, r, i, b2, b3);
      convert_tensor_row(a, id_at(ids, i, b2, b3), b2, b3, dst, i, b2, b3, s);
    }
  });
}

// dst[:, ids[i, b2, b3], b2, b3] = src[:, i, b2, b3], written through src[0]'s memory.
void set_rows(Tensor& node) {
  GL_ASSERT(node.op == Op::SET_ROWS, "set_rows: not a SET_ROWS node");
  const Tensor& dst = *node.src[0];
  const Tensor& src = *node.src[1];
  const Tensor& ids = *node.src[2];
  GL_ASSERT(ids.type == DType::I32 && ids.ne[0] == src.ne[1] && ids.ne[1] == src.ne[2] && ids.ne[2] == src.ne[3],
            "set_rows: ids must be I32 [n, B2, B3] of src");
  GL_ASSERT(src.ne[0] == dst.ne[0] && src.ne[2] == dst.ne[2] && src.ne[3] == dst.ne[3],
            "set_rows: src and dst differ in row length or batch dims");
  check_ids(node, ids, dst.ne[1]);
  const std::vector<char> keep = last_writers(ids);
  const int64_t rows = nrows(src);
  parallel_for(rows, nelements(src) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    Scratch s;
    for (int64_t r = r_begin; r < r_end; ++r) {
      if (!keep[r]) continue;
      int64_t i, b2, b3;
      unravel_row(src, r, i, b2, b3);
      convert_tensor_row(src, i, b2, b3, dst, id_at(ids, i, b2, b3), b2, b3, s);
    }
  });
}

// a and b joined along params.dim; same dtype, equal elsewhere.
void concat(Tensor& dst) {
  GL_ASSERT(dst.op == Op::CONCAT, "concat: not a CONCAT node");
  const Tensor& a = *dst.src[0];
  const Tensor& b = *dst.src[1];
  const int dim = dst.p<ConcatParams>().dim;
  GL_ASSERT(a.type == b.type && dim >= 0 && dim < kMaxDims && dst.ne[dim] == a.ne[dim] + b.ne[dim],
            "concat: a and b must share a dtype and add up along dim");
  const int64_t rows = nrows(dst);
  parallel_for(rows, nelements(dst) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    Scratch s;
    for (int64_t r = r_begin; r < r_end; ++r) {
      std::array<int64_t, kMaxDims> i{};  // dst coordinates, then the source's
      unravel_row(dst, r, i[1], i[2], i[3]);
      char* out = elem_ptr(dst, 0, i[1], i[2], i[3]);
      if (dim == 0) {
        convert_strided(a.type, elem_ptr(a, 0, i[1], i[2], i[3]), a.nb[0], dst.type, out, dst.nb[0], a.ne[0], s);
        convert_strided(b.type, elem_ptr(b, 0, i[1], i[2], i[3]), b.nb[0], dst.type, out + a.ne[0] * dst.nb[0],
                        dst.nb[0], b.ne[0], s);
        continue;
      }
      const bool from_a = i[dim] < a.ne[dim];
      if (!from_a) i[dim] -= a.ne[dim];
      const Tensor& from = from_a ? a : b;
      convert_strided(from.type, elem_ptr(from, 0, i[1], i[2], i[3]), from.nb[0], dst.type, out, dst.nb[0], dst.ne[0],
                      s);
    }
  });
}

// CONT: src[0] -> dst (dst.type, dst's layout). CPY: src[0] -> src[1]'s memory, row-major order to row-major order.
void copy(Tensor& dst) {
  GL_ASSERT(dst.op == Op::CONT || dst.op == Op::CPY, "copy: not a CONT/CPY node");
  if (dst.op == Op::CONT) {
    GL_ASSERT(same_shape(*dst.src[0], dst), "copy: CONT keeps the shape");
    copy_flat(*dst.src[0], dst);
  } else {
    copy_flat(*dst.src[0], *dst.src[1]);
  }
}

}  // namespace gl::cpu
