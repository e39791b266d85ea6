// layout.cpp - builders for views, copies, concatenation and row gathers.
#include <algorithm>

#include "builder.h"

namespace gl {
namespace {

std::array<int64_t, kMaxDims> to_ne(std::initializer_list<int64_t> ne) { return detail::shape(ne); }

void check_view_fits(Op op, const Tensor* a, const Tensor* v) {
  const size_t end = v->view_offs + nbytes(*v);
  const size_t cap = nbytes(root(*a));
  GL_OP_CHECK(end <= cap, op, "view {} at offset {} ends at byte {}, past its source's {} bytes", shape_str(*v),
              v->view_offs, end, cap);
}

}  // namespace

Tensor* view(Context& ctx, Tensor* a, std::initializer_list<int64_t> ne, std::initializer_list<size_t> nb,
             size_t offset) {
  GL_OP_CHECK(ne.size() >= 1 && ne.size() <= kMaxDims && nb.size() + 1 == ne.size(), Op::VIEW,
              "give 1-4 sizes and one stride fewer (nb[0] is the element size)");
  Tensor tmp;
  tmp.type = a->type;
  tmp.ne = to_ne(ne);
  set_contiguous_strides(tmp);
  std::copy(nb.begin(), nb.end(), tmp.nb.begin() + 1);
  for (size_t d = nb.size() + 1; d < kMaxDims; ++d) tmp.nb[d] = tmp.nb[d - 1] * static_cast<size_t>(tmp.ne[d - 1]);
  Tensor* v = ctx.new_view(Op::VIEW, a, tmp.ne, tmp.nb, offset, ViewParams{offset});
  check_view_fits(Op::VIEW, a, v);
  return v;
}

Tensor* view_1d(Context& ctx, Tensor* a, int64_t ne0, size_t offset) { return view(ctx, a, {ne0}, {}, offset); }
Tensor* view_2d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
  return view(ctx, a, {ne0, ne1}, {nb1}, offset);
}
Tensor* view_3d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset) {
  return view(ctx, a, {ne0, ne1, ne2}, {nb1, nb2}, offset);
}

Tensor* reshape(Context& ctx, Tensor* a, std::initializer_list<int64_t> ne) {
  GL_OP_CHECK(is_contiguous(*a), Op::RESHAPE, "source {} is not contiguous", shape_str(*a));
  Tensor tmp;
  tmp.type = a->type;
  tmp.ne = to_ne(ne);
  set_contiguous_strides(tmp);
  GL_OP_CHECK(nelements(tmp) == nelements(*a), Op::RESHAPE, "{} has {} elements, {} has {}", shape_str(*a),
              nelements(*a), shape_str(tmp), nelements(tmp));
  return ctx.new_view(Op::RESHAPE, a, tmp.ne, tmp.nb, 0, NoParams{});
}

Tensor* permute(Context& ctx, Tensor* a, int ax0, int ax1, int ax2, int ax3) {
  const std::array<int32_t, 4> axes{ax0, ax1, ax2, ax3};
  std::array<bool, 4> seen{};
  for (int ax : axes) {
    GL_OP_CHECK(ax >= 0 && ax < kMaxDims && !seen[ax], Op::PERMUTE, "axes must be a permutation of 0..3");
    seen[ax] = true;
  }
  std::array<int64_t, kMaxDims> ne{};
  std::array<size_t, kMaxDims> nb{};
  for (int d = 0; d < kMaxDims; ++d) {
    ne[axes[d]] = a->ne[d];
    nb[axes[d]] = a->nb[d];
  }
  return ctx.new_view(Op::PERMUTE, a, ne, nb, 0, PermuteParams{axes});
}

Tensor* transpose(Context& ctx, Tensor* a) {
  std::array<int64_t, kMaxDims> ne = a->ne;
  std::array<size_t, kMaxDims> nb = a->nb;
  std::swap(ne[0], ne[1]);
  std::swap(nb[0], nb[1]);
  return ctx.new_view(Op::TRANSPOSE, a, ne, nb, 0, NoParams{});
}

Tensor* cont(Context& ctx, Tensor* a) { return cast(ctx, a, a->type); }

Tensor* cast(Context& ctx, Tensor* a, DType type) {
  GL_OP_CHECK(a->ne[0] % dtype_traits(type).block_size == 0, Op::CONT, "rows of {} do not split into {} blocks",
              shape_str(*a), dtype_name(type));
  GL_OP_CHECK(!dtype_traits(a->type).is_quant || type == a->type || type == DType::F32, Op::CONT,
              "a quantized source can only be copied or dequantized to f32");
  return ctx.new_op(Op::CONT, type, a->ne, NoParams{}, {a});
}

Tensor* cpy(Context& ctx, Tensor* src, Tensor* dst) {
  GL_OP_CHECK(nelements(*src) == nelements(*dst), Op::CPY, "src {} and dst {} differ in element count", shape_str(*src),
              shape_str(*dst));
  GL_OP_CHECK(!dtype_traits(src->type).is_quant, Op::CPY, "src must not be quantized");
  GL_OP_CHECK(dst->ne[0] % dtype_traits(dst->type).block_size == 0, Op::CPY, "dst rows do not split into blocks");
  Tensor* v = ctx.new_view(Op::CPY, dst, dst->ne, dst->nb, 0, NoParams{});
  v->src[0] = src;
  v->src[1] = dst;
  return v;
}

Tensor* concat(Context& ctx, Tensor* a, Tensor* b, int dim) {
  const Op op = Op::CONCAT;
  GL_OP_CHECK(dim >= 0 && dim < kMaxDims, op, "dim {} out of range", dim);
  GL_OP_CHECK(a->type == b->type && !dtype_traits(a->type).is_quant, op, "a and b must share a plain dtype");
  std::array<int64_t, kMaxDims> ne = a->ne;
  for (int d = 0; d < kMaxDims; ++d)
    GL_OP_CHECK(d == dim || a->ne[d] == b->ne[d], op, "a {} and b {} differ outside dim {}", shape_str(*a),
                shape_str(*b), dim);
  ne[dim] += b->ne[dim];
  return ctx.new_op(op, a->type, ne, ConcatParams{dim}, {a, b});
}

Tensor* get_rows(Context& ctx, Tensor* a, Tensor* ids) {
  const Op op = Op::GET_ROWS;
  detail::require_type(op, ids, DType::I32, "ids");
  GL_OP_CHECK(ids->ne[3] == 1 || ids->ne[3] == a->ne[3], op, "ids {} vs a {}", shape_str(*ids), shape_str(*a));
  GL_OP_CHECK(ids->ne[1] == a->ne[2] && ids->ne[2] == a->ne[3], op, "ids [n, B2, B3] = {} must match a's batch dims {}",
              shape_str(*ids), shape_str(*a));
  const DType out = a->type == DType::I32 ? DType::I32 : DType::F32;
  return ctx.new_op(op, out, {a->ne[0], ids->ne[0], a->ne[2], a->ne[3]}, NoParams{}, {a, ids});
}

Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* src, Tensor* ids) {
  const Op op = Op::SET_ROWS;
  detail::require_type(op, ids, DType::I32, "ids");
  detail::require_float(op, src, "src");
  GL_OP_CHECK(src->ne[0] == dst->ne[0], op, "row length of src {} and dst {} differ", shape_str(*src), shape_str(*dst));
  GL_OP_CHECK(ids->ne[0] == src->ne[1] && ids->ne[1] == src->ne[2] && ids->ne[2] == src->ne[3], op,
              "ids {} must be [n, B2, B3] of src {}", shape_str(*ids), shape_str(*src));
  GL_OP_CHECK(src->ne[2] == dst->ne[2] && src->ne[3] == dst->ne[3], op, "batch dims of src {} and dst {} differ",
              shape_str(*src), shape_str(*dst));
  Tensor* v = ctx.new_view(op, dst, dst->ne, dst->nb, 0, NoParams{});
  v->src[0] = dst;
  v->src[1] = src;
  v->src[2] = ids;
  return v;
}

}  // namespace gl
