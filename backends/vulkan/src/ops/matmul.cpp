// matmul.cpp - MUL_MAT and MUL_MAT_ID: F32, F16, BF16 and quantized weights (those quants.glsl
// decodes: all but MXFP4), F32/F16/BF16 activations, f32 accumulation. Three shaders:
//   gemm.comp   MUL_MAT with more than kGemvRows activation rows (prefill): shared-memory tiles;
//               gemm_coop.comp (or its 64 x 64 variant) instead for F16/BF16 weights and F32
//               activations in 16-byte rows where tensor cores are offered (and the driver builds
//               its pipelines); with at most kSplitMaxN weight rows, K is split into parts whose
//               sums a second dispatch adds (the node's workspace holds them);
//   gemv.comp   MUL_MAT with 1..kGemvRows rows (decode, verify) where the weight rows can be read
//               in aligned 16-byte chunks and the device has subgroup arithmetic: 1 or 2
//               weight rows per work group (`gemv`, `gemv2` and its variants; gemv_rows and
//               gemv_shader below);
//   matmul.comp the rest (MUL_MAT_ID, odd weight layouts, quantized types other than Q8_0) - any
//               layout, any device.
// Which of gemv.comp and matmul.comp runs depends on the weights and the device only, never on
// the row count, so a row's bits do not depend on how many rows share the product.
#include <algorithm>
#include <array>

#include "check.h"
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

constexpr uint32_t kTile = 8;           // matmul.comp's kTile
constexpr uint32_t kRowsPerGroup = 4;   // matmul.comp's kRowsPerGroup
constexpr uint32_t kGemvRows = 8;       // gemv.comp's kMaxRows
constexpr uint32_t kGemvChunk = 8;      // gemv.comp's kChunk
constexpr uint32_t kGemvThreads = 128;  // gemv.comp's work group size
constexpr uint32_t kGemvWideRows = 2;   // weight rows per work group of the wide products
// Fewest work groups worth several rows each (2 per SM of an H100): narrower products (the 32-row
// GDN gate projections) keep a row per work group so that more SMs stream them.
constexpr uint64_t kFewGemvGroups = 256;
constexpr uint32_t kGemmTile = 64;       // gemm.comp's kTileN and kTileM
constexpr uint64_t kBigTileGroups = 96;  // fewest 128 x 128 work groups worth the big tile
// Split K: a tensor-core product of at most kSplitMaxN weight rows (the GDN gate projections, 32
// outputs: 8 tiles at 512 tokens) is cut along K into about kSplitParts parts of kSplitAlign
// multiples (whole slabs of either gemm_coop variant), at least 2 kSplitAlign k each. The split
// depends on N and K only, so a row's bits do not depend on how many rows share the product or
// on the tile size.
constexpr uint64_t kSplitMaxN = 64;
constexpr uint64_t kSplitParts = 16;
constexpr uint32_t kSplitAlign = 192;
constexpr VkSubgroupFeatureFlags kGemvSubgroupOps = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;

// gemv.comp's, gemm.comp's and gemm_coop.comp's push constants (the last five: gemm_coop.comp's
// split K).
struct ProductPush {
  uint32_t x_nb[4], d_nb[4], w_nb[4];
  uint32_t K, N, M, B2, r2, r3;
  uint32_t w_off, x_off, d_off, types, x_vec, n_groups;
  uint32_t k_len, parts, part_stride, ws_off, mode;
};
static_assert(sizeof(ProductPush) <= kPushBytes);

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

// Whether every weight row of w (dtype t) splits into 8-element chunks gemv.comp can read with
// 16-byte loads. Q8_0 rows are whole blocks, read as 16-bit words.
bool gemv_weights(const Operand& w, DType t) {
  if (w.ne[0] % kGemvChunk != 0) return false;
  if (t == DType::Q8_0) return true;
  const uint32_t per16 = t == DType::F32 ? 4 : 8;  // elements per 16 bytes
  return w.nb[0] == 1 && w.offset % per16 == 0 && w.nb[1] % per16 == 0 && w.nb[2] % per16 == 0 && w.nb[3] % per16 == 0;
}

// Whether gemv.comp may read x as vec4s: F32 rows that start on 16-byte boundaries.
bool vec4_rows(const Operand& x) {
  return x.type == TYPE_F32 && x.nb[0] == 1 && x.offset % 4 == 0 && x.nb[1] % 4 == 0 && x.nb[2] % 4 == 0 &&
         x.nb[3] % 4 == 0;
}

// The fields both product shaders read: strides, shape, batch ratios, offsets and types.
template <class Push>
void fill_product(Push& pc, const Operand& w, const Operand& x, const Operand& d, DType wt) {
  for (int i = 0; i < 4; ++i) {
    pc.x_nb[i] = x.nb[i];
    pc.d_nb[i] = d.nb[i];
    pc.w_nb[i] = w.nb[i];
  }
  pc.K = w.ne[0];
  pc.N = w.ne[1];
  pc.M = d.ne[1];
  pc.B2 = d.ne[2];
  pc.r2 = x.ne[2] / w.ne[2];
  pc.r3 = x.ne[3] / w.ne[3];
  pc.w_off = w.offset;
  pc.x_off = x.offset;
  pc.d_off = d.offset;
  pc.types = shader_type(wt, w) | x.type << 4 | d.type << 8;
}

ProductPush product_push(const Operand& w, const Operand& x, const Operand& d, DType wt) {
  ProductPush pc{};
  fill_product(pc, w, x, d, wt);
  pc.x_vec = vec4_rows(x) ? 1 : 0;
  return pc;
}

uint32_t checked_groups(uint64_t groups) {
  if (groups >= (uint64_t{1} << 32)) throw VkFault{"mul_mat: too many work groups for one dispatch"};
  return static_cast<uint32_t>(groups);
}

// matmul.comp: any layout, MUL_MAT_ID too.
void general_product(Recorder& rec, const Tensor& node) {
  const bool id = node.op == Op::MUL_MAT_ID;
  const Operand w = rec.operand(*node.src[0]);
  const Operand x = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  const Operand ids = id ? rec.operand(*node.src[2]) : d;
  MatmulPush pc{};
  fill_product(pc, w, x, d, node.src[0]->type);  // MUL_MAT_ID: M is the ids per token
  if (id) pc.r2 = pc.r3 = 1;
  pc.ids_off = ids.offset;
  pc.tile = id ? 1 : kTile;
  pc.id_mode = id ? 1 : 0;
  pc.ids_nb0 = ids.nb[0];
  pc.ids_nb1 = ids.nb[1];
  pc.x1 = x.ne[1];
  pc.n_experts = w.ne[2];
  pc.n_groups = checked_groups(uint64_t{(pc.N + kRowsPerGroup - 1) / kRowsPerGroup} * ((pc.M + pc.tile - 1) / pc.tile) *
                               d.ne[2] * d.ne[3]);
  rec.dispatch(Shader::MATMUL, {w, x, d, ids}, &pc, sizeof pc, pc.n_groups);
}

// The tile (128 or 64) gemm_coop.comp takes for n weight rows, m activation rows and batches.
uint32_t coop_tile(const Device& dev, uint64_t n, uint64_t m, uint64_t batches) {
  if (dev.coop_tile() != 0) return dev.coop_tile();
  return ((n + 127) / 128) * ((m + 127) / 128) * batches >= kBigTileGroups ? 128 : 64;
}

// gemm_coop.comp (128 x 128 tiles) or its 64 x 64 variant for F16/BF16 weights in 16-byte chunks
// and F32 activation rows where tensor cores are offered (the _f variants for Precision::FAST:
// activations rounded to f16, one product instead of hi and lo); else gemm.comp.
Shader prefill_shader(Recorder& rec, const Operand& w, const Operand& x, DType wt, uint64_t batches) {
  const Device& dev = rec.device();
  const bool fast = !dev.split_f16();
  const Shader big_tile = fast ? Shader::GEMM_COOP_F : Shader::GEMM_COOP;
  const Shader small_tile = fast ? Shader::GEMM_COOP64_F : Shader::GEMM_COOP64;
  const bool coop = dev.coop_matrix() && (wt == DType::F16 || wt == DType::BF16) && gemv_weights(w, wt) &&
                    vec4_rows(x) && rec.has_pipeline(big_tile) && rec.has_pipeline(small_tile);
  if (!coop) return Shader::GEMM;
  return coop_tile(dev, w.ne[1], x.ne[1], batches) == 128 ? big_tile : small_tile;
}

struct Split {
  uint32_t parts = 1, k_len = 0;
};

// How a tensor-core product of n weight rows splits its K (parts = 1: not).
Split split_k(uint64_t n, uint32_t k) {
  Split s;
  if (n > kSplitMaxN) return s;
  const uint64_t len = std::max<uint64_t>((k + kSplitParts - 1) / kSplitParts, 2 * kSplitAlign);
  s.k_len = static_cast<uint32_t>((len + kSplitAlign - 1) / kSplitAlign * kSplitAlign);
  s.parts = (k + s.k_len - 1) / s.k_len;
  return s;
}

// The split of node's product if it takes gemm_coop.comp (sized before the recording knows).
Split node_split(const Device& dev, const Tensor& node) {
  const Tensor& w = *node.src[0];
  const uint64_t m = node.ne[1], batches = uint64_t(node.ne[2]) * uint64_t(node.ne[3]);
  if (node.op != Op::MUL_MAT || !dev.coop_matrix() || m <= kGemvRows || (w.type != DType::F16 && w.type != DType::BF16))
    return {};
  if (m * batches * uint64_t(w.ne[1]) == 0) return {};  // an empty product
  return split_k(uint64_t(w.ne[1]), uint32_t(w.ne[0]));
}

// gemv.comp's weight rows per work group (1 or 2), by the weights' shape only, never the row
// count: a verify row keeps decode's bits.
uint32_t gemv_rows(const Device& dev, uint32_t n, uint64_t batches) {
  if (dev.gemv_rows() != 0) return dev.gemv_rows();
  return uint64_t{(n + kGemvWideRows - 1) / kGemvWideRows} * batches >= kFewGemvGroups ? kGemvWideRows : 1;
}

// The GEMV variant: two rows have ones for one activation row (decode: fewer registers) and for
// BF16 / F16 weights (no per-type branches). They read the same values in the same order as the
// generic shader, so a verify row still gives decode's bits.
Shader gemv_shader(uint32_t rows, bool decode, DType wt) {
  if (rows == 1) return Shader::GEMV;
  if (wt == DType::BF16) return decode ? Shader::GEMV2_BF16_D : Shader::GEMV2_BF16;
  if (wt == DType::F16) return decode ? Shader::GEMV2_F16_D : Shader::GEMV2_F16;
  return decode ? Shader::GEMV2_D : Shader::GEMV2;
}

// gemm_coop.comp: one dispatch, or under split K the parts then their sum (mode 1).
void coop_product(Recorder& rec, const Tensor& node, Shader shader, ProductPush pc, std::array<Operand, 3> wxd) {
  const auto& [w, x, d] = wxd;
  const bool big = shader == Shader::GEMM_COOP || shader == Shader::GEMM_COOP_F;
  const uint64_t tile = big ? 128 : 64, batches = uint64_t{d.ne[2]} * d.ne[3];
  const uint64_t groups = ((pc.N + tile - 1) / tile) * ((pc.M + tile - 1) / tile) * batches;
  const Split split = node_split(rec.device(), node);
  if (split.parts <= 1) {
    pc.parts = 1;
    pc.k_len = pc.K;
    pc.n_groups = checked_groups(groups);
    rec.dispatch(shader, {w, x, d, d}, &pc, sizeof pc, pc.n_groups);
    return;
  }
  const Operand ws = rec.workspace(node, matmul_workspace(rec.device(), node));
  pc.parts = split.parts;
  pc.k_len = split.k_len;
  pc.part_stride = static_cast<uint32_t>(batches * pc.M * pc.N);
  pc.ws_off = ws.offset;
  pc.n_groups = checked_groups(groups * split.parts);
  rec.dispatch(shader, {w, x, d, ws}, &pc, sizeof pc, pc.n_groups);
  pc.mode = 1;
  const uint64_t threads = big ? 512 : 128;  // gemm_coop.comp's kThreads
  pc.n_groups = checked_groups((pc.part_stride + threads - 1) / threads);
  rec.dispatch(shader, {w, x, d, ws}, &pc, sizeof pc, pc.n_groups);
}

}  // namespace

size_t matmul_workspace(const Device& dev, const Tensor& node) {
  const Split split = node_split(dev, node);
  if (split.parts <= 1) return 0;
  return size_t{split.parts} * static_cast<size_t>(nelements(node)) * sizeof(float);
}

bool supports_matmul(const Tensor& node) {
  const Tensor& w = *node.src[0];
  const Tensor& x = *node.src[1];
  if (!(float_operand(w) || quant_rows(w)) || !float_operand(x) || !float_operand(node)) return false;
  if (nelements(w) >= (int64_t{1} << 32) || nelements(x) >= (int64_t{1} << 32)) return false;
  return node.op == Op::MUL_MAT || strides_in_elements(*node.src[2]);
}

void mul_mat(Recorder& rec, const Tensor& node) {
  const DType wt = node.src[0]->type;
  if (node.op == Op::MUL_MAT_ID || (dtype_traits(wt).is_quant && wt != DType::Q8_0)) return general_product(rec, node);
  const Operand w = rec.operand(*node.src[0]);
  const Operand x = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  ProductPush pc = product_push(w, x, d, wt);
  const uint64_t batches = uint64_t{d.ne[2]} * d.ne[3];
  if (pc.M > kGemvRows) {
    const Shader shader = prefill_shader(rec, w, x, wt, batches);
    if (is_gemm_coop(shader)) return coop_product(rec, node, shader, pc, {w, x, d});
    const uint64_t tiles = ((pc.N + kGemmTile - 1) / kGemmTile) * ((pc.M + kGemmTile - 1) / kGemmTile);
    pc.n_groups = checked_groups(tiles * batches);
    rec.dispatch(shader, {w, x, d}, &pc, sizeof pc, pc.n_groups);
  } else if (rec.device().subgroup_ops(kGemvSubgroupOps) && gemv_weights(w, wt)) {
    const uint32_t rows = gemv_rows(rec.device(), pc.N, batches);
    pc.n_groups = checked_groups(uint64_t{(pc.N + rows - 1) / rows} * batches);
    rec.dispatch(gemv_shader(rows, pc.M == 1, wt), {w, x, d}, &pc, sizeof pc, pc.n_groups);
  } else {
    general_product(rec, node);
  }
}

}  // namespace gl::vulkan
