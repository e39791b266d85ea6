// reference_layout.cpp - reference for row gathers/scatters, concatenation, views and copies.
//
// View ops are evaluated from their meaning (a permutation moves indices, a
// reshape keeps the flat order), not from the strides the builders chose, so
// the harness can check a view's metadata against its op.
#include <cmath>

#include "common/reference_ops.h"
#include "ggml-lite/status.h"

namespace gl::test::ref {

namespace {

int64_t row_id(double v, int64_t n_rows) {
  const auto r = static_cast<int64_t>(v);
  GL_ASSERT(static_cast<double>(r) == v && r >= 0 && r < n_rows, "reference: row id out of range");
  return r;
}

}  // namespace

// out[:, i, b2, b3] = a[:, ids[i, b2, b3], b2, b3]
RefArray get_rows(const Tensor& node, Srcs s) {
  const RefArray& a = s[0];
  const RefArray& ids = s[1];
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t i0, int64_t i, int64_t b2, int64_t b3) {
    out.at(i0, i, b2, b3) = a.at(i0, row_id(ids.at(i, b2, b3), a.ne[1]), b2, b3);
  });
  return out;
}

// dst with dst[:, ids[i, b2, b3], b2, b3] = src[:, i, b2, b3]
RefArray set_rows(const Tensor& node, Srcs s) {
  const RefArray& src = s[1];
  const RefArray& ids = s[2];
  RefArray out = s[0];
  GL_ASSERT(out.ne == node.ne, "ref::set_rows: the result has dst's shape");
  for_each_index(src.ne, [&](int64_t i0, int64_t i, int64_t b2, int64_t b3) {
    out.at(i0, row_id(ids.at(i, b2, b3), out.ne[1]), b2, b3) = src.at(i0, i, b2, b3);
  });
  return out;
}

RefArray concat(const Tensor& node, Srcs s) {
  const int dim = node.p<ConcatParams>().dim;
  const RefArray& a = s[0];
  const RefArray& b = s[1];
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    std::array<int64_t, kMaxDims> i{i0, i1, i2, i3};
    if (i[dim] < a.ne[dim]) {
      out.at(i0, i1, i2, i3) = a.at(i[0], i[1], i[2], i[3]);
    } else {
      i[dim] -= a.ne[dim];
      out.at(i0, i1, i2, i3) = b.at(i[0], i[1], i[2], i[3]);
    }
  });
  return out;
}

// A view of a contiguous, unquantized source: element (i0..i3) sits at byte
// offset + sum(i * nb) of the source, i.e. at that flat index.
RefArray view(const Tensor& node, Srcs s) {
  const Tensor& src = *node.src[0];
  GL_ASSERT(is_contiguous(src) && !dtype_traits(src.type).is_quant, "ref::view: source must be contiguous");
  const size_t esz = dtype_traits(src.type).block_bytes;
  const size_t base = node.view_offs - (src.view_src ? src.view_offs : 0);
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const size_t byte = base + static_cast<size_t>(i0) * node.nb[0] + static_cast<size_t>(i1) * node.nb[1] +
                        static_cast<size_t>(i2) * node.nb[2] + static_cast<size_t>(i3) * node.nb[3];
    GL_ASSERT(byte % esz == 0 && byte / esz < s[0].v.size(), "ref::view: element outside the source");
    out.at(i0, i1, i2, i3) = s[0].v[byte / esz];
  });
  return out;
}

RefArray reshape(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  GL_ASSERT(out.v.size() == s[0].v.size(), "ref::reshape: element counts differ");
  out.v = s[0].v;  // same elements in the same flat order
  return out;
}

// Source dim d becomes result dim axes[d].
RefArray permute(const Tensor& node, Srcs s) {
  const auto& axes = node.p<PermuteParams>().axes;
  const RefArray& a = s[0];
  RefArray out(node.ne);
  for_each_index(a.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const std::array<int64_t, kMaxDims> i{i0, i1, i2, i3};
    std::array<int64_t, kMaxDims> j{};
    for (int d = 0; d < kMaxDims; ++d) j[axes[d]] = i[d];
    out.at(j[0], j[1], j[2], j[3]) = a.at(i0, i1, i2, i3);
  });
  return out;
}

RefArray transpose(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  for_each_index(s[0].ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    out.at(i1, i0, i2, i3) = s[0].at(i0, i1, i2, i3);
  });
  return out;
}

// The same logical values (the dtype change is the backend's rounding).
RefArray cont(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  out.v = s[0].v;
  return out;
}

// src's elements, in their logical order, laid into dst's logical order.
RefArray cpy(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  GL_ASSERT(out.v.size() == s[0].v.size(), "ref::cpy: element counts differ");
  out.v = s[0].v;
  return out;
}

}  // namespace gl::test::ref
