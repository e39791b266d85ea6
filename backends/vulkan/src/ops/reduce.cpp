// reduce.cpp - ARGMAX, TOP_K and SUM_ROWS through shaders/reduce.comp (one work group per row;
// ARGMAX rows longer than kSegment in two dispatches, segments first: see the shader).
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct ReducePush {
  uint32_t ne[4], a_nb[4], d_nb[4];
  uint32_t a_off, d_off, types, mode, k;
  uint32_t seg, n_seg, ws_off;
};
static_assert(sizeof(ReducePush) <= kPushBytes);

constexpr int64_t kSegment = 4096;  // ARGMAX entries per work group of the segmented form

int64_t segments(const Tensor& node) {
  const int64_t n = node.src[0]->ne[0];
  return node.op == Op::ARGMAX && n > kSegment ? (n + kSegment - 1) / kSegment : 0;
}

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_reduce(const Tensor& node) {
  return float_operand(*node.src[0]) && strides_in_elements(node) && nelements(*node.src[0]) < (int64_t{1} << 32);
}

size_t reduce_workspace(const Tensor& node) {
  return static_cast<size_t>(segments(node) * nrows(*node.src[0])) * 2 * sizeof(float);
}

void reduce(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  ReducePush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = a.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.a_off = a.offset;
  pc.d_off = d.offset;
  pc.types = a.type | d.type << 4;
  pc.mode = node.op == Op::ARGMAX ? 0 : node.op == Op::TOP_K ? 1 : 2;
  pc.k = node.op == Op::TOP_K ? static_cast<uint32_t>(node.p<TopKParams>().k) : 1;
  const auto rows = static_cast<uint32_t>(nrows(*node.src[0]));
  if (segments(node) == 0) return rec.dispatch(Shader::REDUCE, {a, d}, &pc, sizeof pc, rows);
  const Operand w = rec.workspace(node, reduce_workspace(node));
  pc.seg = static_cast<uint32_t>(kSegment);
  pc.n_seg = static_cast<uint32_t>(segments(node));
  pc.ws_off = w.offset;
  pc.mode = 3;
  rec.dispatch(Shader::REDUCE, {a, d, w}, &pc, sizeof pc, rows * pc.n_seg);
  pc.mode = 4;
  rec.dispatch(Shader::REDUCE, {a, d, w}, &pc, sizeof pc, rows);
}

}  // namespace gl::vulkan
