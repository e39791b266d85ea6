// attention.cpp - FLASH_ATTN. Up to kMaxSplitRows query rows (decode, verify): flash_attn_rows.comp,
// the keys in chunks of kChunk over many work groups, then one combine per row (the workspace
// holds each chunk's partial output, max and sum). More rows (prefill): flash_attn_tile.comp, kTileRows
// rows of one kv head per work group with an online softmax over blocks of keys, no workspace;
// heads wider than kTileMaxDv, or a device with less shared memory than it takes, take
// flash_attn.comp, one work group per query row, the row's scores in the workspace (heads x
// tokens x keys floats). Which one runs depends on the row count only through kMaxSplitRows,
// which verify never passes.
#include <algorithm>

#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct AttnPush {
  uint32_t q_nb[3], k_nb[3], v_nb[3], m_nb[2], d_nb[3];
  uint32_t q_off, k_off, v_off, m_off, d_off, ws_off;
  uint32_t dk, dv, n_head, n_q, n_kv, group, has_mask, causal, types;
  float scale;
  uint32_t mode, n_chunks;  // flash_attn_rows.comp's
};
static_assert(sizeof(AttnPush) <= kPushBytes);

constexpr int64_t kMaxSplitRows = 8;     // query rows (tokens) that take flash_attn_rows.comp
constexpr int64_t kChunk = 64;           // flash_attn_rows.comp's kChunk
constexpr int64_t kRowsMaxDk = 512;      // flash_attn_rows.comp's kMaxDk
constexpr int64_t kTileRows = 64;        // flash_attn_tile.comp's kR
constexpr int64_t kTileMaxDv = 256;      // flash_attn_tile.comp's kMaxDv
constexpr uint32_t kTileShared = 41732;  // flash_attn_tile.comp's shared memory, bytes
constexpr VkSubgroupFeatureFlags kRowsOps = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;

// Whether node takes flash_attn_rows.comp (given a device with subgroup arithmetic).
bool split_rows(const Tensor& node) { return node.src[0]->ne[2] <= kMaxSplitRows && node.src[0]->ne[0] <= kRowsMaxDk; }

int64_t n_chunks(const Tensor& node) { return (node.src[1]->ne[2] + kChunk - 1) / kChunk; }

// The shader node takes on dev (the workspace is sized from it before the recording).
Shader attention_shader(const Device& dev, const Tensor& node) {
  if (split_rows(node) && dev.subgroup_ops(kRowsOps)) return Shader::FLASH_ATTN_ROWS;
  if (node.src[2]->ne[0] <= kTileMaxDv && dev.limits().maxComputeSharedMemorySize >= kTileShared)
    return Shader::FLASH_ATTN_TILE;
  return Shader::FLASH_ATTN;
}

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_flash_attn(const Device& dev, const Tensor& node) {
  for (int i = 0; i < 3; ++i)
    if (!float_operand(*node.src[i]) || nelements(*node.src[i]) >= (int64_t{1} << 32)) return false;
  const Tensor* mask = node.src[3];
  if (mask && (mask->type != DType::F32 || !strides_in_elements(*mask))) return false;
  return float_operand(node) && flash_attn_workspace(dev, node) < (size_t{1} << 31);
}

// flash_attn_rows.comp: each chunk's partial output, max and sum; flash_attn.comp: every row's
// scores; flash_attn_tile.comp: none.
size_t flash_attn_workspace(const Device& dev, const Tensor& node) {
  const Tensor& q = *node.src[0];
  const int64_t rows = q.ne[1] * q.ne[2];
  switch (attention_shader(dev, node)) {
    case Shader::FLASH_ATTN_ROWS:
      return static_cast<size_t>(rows * n_chunks(node) * (node.src[2]->ne[0] + 2)) * sizeof(float);
    case Shader::FLASH_ATTN: return static_cast<size_t>(rows * node.src[1]->ne[2]) * sizeof(float);
    default: return 0;
  }
}

void flash_attn(Recorder& rec, const Tensor& node) {
  const Operand q = rec.operand(*node.src[0]);
  const Operand k = rec.operand(*node.src[1]);
  const Operand v = rec.operand(*node.src[2]);
  const bool has_mask = node.src[3] != nullptr;
  const Operand m = has_mask ? rec.operand(*node.src[3]) : q;
  const Operand d = rec.operand(node);
  const Shader shader = attention_shader(rec.device(), node);
  const size_t ws_bytes = flash_attn_workspace(rec.device(), node);
  const Operand w = ws_bytes > 0 ? rec.workspace(node, ws_bytes) : d;  // the tiled shader has none
  AttnPush pc{};
  for (int i = 0; i < 3; ++i) {
    pc.q_nb[i] = q.nb[i];
    pc.k_nb[i] = k.nb[i];
    pc.v_nb[i] = v.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.m_nb[0] = m.nb[0];
  pc.m_nb[1] = m.nb[1];
  pc.q_off = q.offset;
  pc.k_off = k.offset;
  pc.v_off = v.offset;
  pc.m_off = m.offset;
  pc.d_off = d.offset;
  pc.ws_off = w.offset;
  pc.dk = q.ne[0];
  pc.dv = v.ne[0];
  pc.n_head = q.ne[1];
  pc.n_q = q.ne[2];
  pc.n_kv = k.ne[2];
  pc.group = q.ne[1] / k.ne[1];
  pc.has_mask = has_mask ? 1 : 0;
  pc.causal = node.p<SoftmaxParams>().causal ? 1 : 0;
  pc.types = q.type | k.type << 4 | v.type << 8 | d.type << 12;
  pc.scale = node.p<SoftmaxParams>().scale;
  const uint32_t rows = pc.n_head * pc.n_q;
  if (shader == Shader::FLASH_ATTN_ROWS) {
    pc.n_chunks = static_cast<uint32_t>(n_chunks(node));
    pc.mode = 0;
    rec.dispatch(Shader::FLASH_ATTN_ROWS, {q, k, v, m, d, w}, &pc, sizeof pc, rows * pc.n_chunks);
    pc.mode = 1;
    rec.dispatch(Shader::FLASH_ATTN_ROWS, {q, k, v, m, d, w}, &pc, sizeof pc, rows);
    return;
  }
  if (shader == Shader::FLASH_ATTN_TILE) {
    const int64_t tile_rows = int64_t{pc.n_q} * pc.group;
    const auto groups = static_cast<uint32_t>(k.ne[1] * ((tile_rows + kTileRows - 1) / kTileRows));
    rec.dispatch(Shader::FLASH_ATTN_TILE, {q, k, v, m, d, w}, &pc, sizeof pc, groups);
    return;
  }
  rec.dispatch(Shader::FLASH_ATTN, {q, k, v, m, d, w}, &pc, sizeof pc, rows);
}

}  // namespace gl::vulkan
