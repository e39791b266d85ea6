// matmul.cpp - MUL_MAT and MUL_MAT_ID through shaders/matmul.comp: F32, F16, BF16 and Q8_0
// weights, F32/F16/BF16 activations, f32 accumulation. Other quantized weights are declined.
#include "check.h"
#include "ggml-lite/quants/q8_0.h"
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

constexpr uint32_t kTypeQ8_0 = 4;      // matmul.comp's TYPE_Q8_0
constexpr uint32_t kTile = 8;          // matmul.comp's kTile
constexpr uint32_t kRowsPerGroup = 4;  // matmul.comp's kRowsPerGroup

struct MatmulPush {
  uint32_t x_nb[4], d_nb[4], w_nb[4];
  uint32_t K, N, M, B2, r2, r3;
  uint32_t w_off, x_off, d_off, ids_off, types, tile, id_mode;
  uint32_t ids_nb0, ids_nb1, x1, n_experts, n_groups;
};
static_assert(sizeof(MatmulPush) <= kPushBytes);

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

// Q8_0 rows of whole blocks, in 16-bit words (blocks are 34 bytes).
bool q8_0_weights(const Tensor& w) {
  return w.type == DType::Q8_0 && w.ne[0] % kQ8_0Block == 0 && w.nb[0] == sizeof(BlockQ8_0) && w.nb[1] % 2 == 0 &&
         w.nb[2] % 2 == 0 && w.nb[3] % 2 == 0;
}

}  // namespace

bool supports_matmul(const Tensor& node) {
  const Tensor& w = *node.src[0];
  const Tensor& x = *node.src[1];
  if (!(float_operand(w) || q8_0_weights(w)) || !float_operand(x) || !float_operand(node)) return false;
  if (nelements(w) >= (int64_t{1} << 32) || nelements(x) >= (int64_t{1} << 32)) return false;
  return node.op == Op::MUL_MAT || strides_in_elements(*node.src[2]);
}

void mul_mat(Recorder& rec, const Tensor& node) {
  const bool id = node.op == Op::MUL_MAT_ID;
  const Operand w = rec.operand(*node.src[0]);
  const Operand x = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  const Operand ids = id ? rec.operand(*node.src[2]) : d;
  MatmulPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.x_nb[i] = x.nb[i];
    pc.d_nb[i] = d.nb[i];
    pc.w_nb[i] = w.nb[i];
  }
  pc.K = w.ne[0];
  pc.N = w.ne[1];
  pc.M = d.ne[1];  // MUL_MAT_ID: ids per token
  pc.B2 = d.ne[2];
  pc.r2 = id ? 1 : x.ne[2] / w.ne[2];
  pc.r3 = id ? 1 : x.ne[3] / w.ne[3];
  pc.w_off = w.offset;
  pc.x_off = x.offset;
  pc.d_off = d.offset;
  pc.ids_off = ids.offset;
  pc.types = (node.src[0]->type == DType::Q8_0 ? kTypeQ8_0 : w.type) | x.type << 4 | d.type << 8;
  pc.tile = id ? 1 : kTile;
  pc.id_mode = id ? 1 : 0;
  pc.ids_nb0 = ids.nb[0];
  pc.ids_nb1 = ids.nb[1];
  pc.x1 = x.ne[1];
  pc.n_experts = w.ne[2];
  const uint64_t groups =
      uint64_t{(pc.N + kRowsPerGroup - 1) / kRowsPerGroup} * ((pc.M + pc.tile - 1) / pc.tile) * d.ne[2] * d.ne[3];
  if (groups >= (uint64_t{1} << 32)) throw VkFault{"mul_mat: too many work groups for one dispatch"};
  pc.n_groups = static_cast<uint32_t>(groups);
  rec.dispatch(Shader::MATMUL, {w, x, d, ids}, &pc, sizeof pc, pc.n_groups);
}

}  // namespace gl::vulkan
