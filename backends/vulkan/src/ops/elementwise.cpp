// elementwise.cpp - binary, unary and SwiGLU nodes through shaders/elementwise.comp.
#include <algorithm>

#include "ops/ops.h"

namespace gl::vulkan {
namespace {

// Mirrors the Push block of elementwise.comp.
struct ElementwisePush {
  uint32_t ne[4], a_nb[4], b_ne[4], b_nb[4], d_nb[4];
  uint32_t a_off, b_off, d_off, types, op, n;
  float p0, p1;
};
static_assert(sizeof(ElementwisePush) <= kPushBytes);

// The shader's OP_* codes.
uint32_t op_code(Op op) {
  switch (op) {
    case Op::ADD: return 0;
    case Op::SUB: return 1;
    case Op::MUL: return 2;
    case Op::DIV: return 3;
    case Op::SCALE: return 4;
    case Op::SILU: return 5;
    case Op::SIGMOID: return 6;
    case Op::SOFTPLUS: return 7;
    case Op::EXP: return 8;
    default: return 9;  // SWIGLU: supports_elementwise admits nothing else
  }
}

bool is_binary(Op op) { return op == Op::ADD || op == Op::SUB || op == Op::MUL || op == Op::DIV || op == Op::SWIGLU; }

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_elementwise(const Tensor& node) {
  if (!float_operand(node) || !float_operand(*node.src[0])) return false;
  if (nelements(node) >= (int64_t{1} << 32)) return false;  // the shader indexes in 32 bits
  return !is_binary(node.op) || float_operand(*node.src[1]);
}

void elementwise(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  const Operand b = is_binary(node.op) ? rec.operand(*node.src[1]) : a;
  ElementwisePush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.b_ne[i] = b.ne[i];
    pc.b_nb[i] = b.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.a_off = a.offset;
  pc.b_off = b.offset;
  pc.d_off = d.offset;
  pc.types = a.type | b.type << 4 | d.type << 8;
  pc.op = op_code(node.op);
  pc.n = static_cast<uint32_t>(nelements(node));
  if (node.op == Op::SCALE) {
    pc.p0 = node.p<ScaleParams>().scale;
    pc.p1 = node.p<ScaleParams>().bias;
  }
  rec.dispatch(Shader::ELEMENTWISE, {a, b, d}, &pc, sizeof pc, (pc.n + 255) / 256);
}

}  // namespace gl::vulkan
