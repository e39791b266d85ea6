// layout.cpp - GET_ROWS / SET_ROWS (shaders/rows.comp) and CONT / CPY / CONCAT
// (shaders/copy.comp) for F32, F16, BF16 and I32, and GET_ROWS from the quantized types of
// quants.glsl (token embeddings);
// other quantized tensors are declined.
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct RowsPush {
  uint32_t ne[4], s_nb[4], d_nb[4], x_nb[4];
  uint32_t s_off, x_off, d_off, types, set, n, n_rows;
};
static_assert(sizeof(RowsPush) <= kPushBytes);

struct CopyPush {
  uint32_t ne[4], d_nb[4], a_ne[4], a_nb[4], b_nb[4];
  uint32_t a_off, b_off, d_off, types, concat_dim, n;
};
static_assert(sizeof(CopyPush) <= kPushBytes);

bool plain(const Tensor& t) { return strides_in_elements(t) && nelements(t) < (int64_t{1} << 32); }

uint32_t groups(uint32_t n) { return (n + 255) / 256; }

}  // namespace

bool supports_layout(const Tensor& node) {
  const int first = node.op == Op::GET_ROWS && quant_rows(*node.src[0]) && !dtype_traits(node.type).is_quant ? 1 : 0;
  for (int i = first; i < node.n_srcs(); ++i)
    if (!plain(*node.src[i])) return false;
  return plain(node);
}

void get_rows(Recorder& rec, const Tensor& node) {
  const Operand s = rec.operand(*node.src[0]);
  const Operand x = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  RowsPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.s_nb[i] = s.nb[i];
    pc.d_nb[i] = d.nb[i];
    pc.x_nb[i] = x.nb[i];
  }
  pc.s_off = s.offset;
  pc.x_off = x.offset;
  pc.d_off = d.offset;
  pc.types = shader_type(node.src[0]->type, s) | d.type << 4;
  pc.set = 0;
  pc.n = static_cast<uint32_t>(nelements(node));
  pc.n_rows = s.ne[1];
  rec.dispatch(Shader::ROWS, {s, x, d}, &pc, sizeof pc, groups(pc.n));
}

// The node is a view of src[0] (the destination); src[1] holds the rows, src[2] the ids.
void set_rows(Recorder& rec, const Tensor& node) {
  const Operand d = rec.operand(node);
  const Operand s = rec.operand(*node.src[1]);
  const Operand x = rec.operand(*node.src[2]);
  RowsPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = s.ne[i];
    pc.s_nb[i] = s.nb[i];
    pc.d_nb[i] = d.nb[i];
    pc.x_nb[i] = x.nb[i];
  }
  pc.s_off = s.offset;
  pc.x_off = x.offset;
  pc.d_off = d.offset;
  pc.types = s.type | d.type << 4;
  pc.set = 1;
  pc.n = static_cast<uint32_t>(nelements(*node.src[1]));
  pc.n_rows = d.ne[1];
  rec.dispatch(Shader::ROWS, {s, x, d}, &pc, sizeof pc, groups(pc.n));
}

// CONT and CPY (the node is a view of its destination, src[1]) copy src[0]; CONCAT joins two.
void copy(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  const bool concat = node.op == Op::CONCAT;
  const Operand b = concat ? rec.operand(*node.src[1]) : a;
  CopyPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.d_nb[i] = d.nb[i];
    pc.a_ne[i] = a.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.b_nb[i] = b.nb[i];
  }
  pc.a_off = a.offset;
  pc.b_off = b.offset;
  pc.d_off = d.offset;
  pc.types = a.type | b.type << 4 | d.type << 8;
  pc.concat_dim = concat ? static_cast<uint32_t>(node.p<ConcatParams>().dim) : 4;
  pc.n = static_cast<uint32_t>(nelements(node));
  rec.dispatch(Shader::COPY, {a, b, d}, &pc, sizeof pc, groups(pc.n));
}

}  // namespace gl::vulkan
