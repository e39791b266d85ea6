// matmul.cpp - MUL_MAT and MUL_MAT_ID on the CPU.
//
// Both ops reduce to blocks of activation rows that all multiply one weight
// matrix (a batch slice of w, or one expert). Work is split into jobs of
// (block, tile of weight rows): a job converts its weight rows to float once
// into per-thread scratch and dots them against every activation row of the
// block (the dot_rows of dtype_kernels.h). Blocks are capped so their activations
// stay in cache while the weight tiles stream past. Blocks of a few activation
// rows (decode, MTP verify) read the weight rows in place and convert them in
// registers instead, which saves a pass over the weights; F16 and BF16 weights,
// whose conversion is one or two instructions a vector, are read so for every
// block (prefill included). Which conversion and
// dot product a weight type uses, and in what type it wants the activations, is
// looked up in dtype_kernels.h; a type whose activations are not F32 (Precision::FAST:
// int8 blocks, each row quantized on its own) always reads its weights in place.
// The *_reference functions are the plain loops the fast path is tested against.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "dtype_kernels.h"
#include "ggml-lite/status.h"
#include "kernels.h"
#include "matmul.h"
#include "parallel.h"
#include "rows.h"
#include "team.h"

namespace gl::cpu {
namespace {

constexpr int64_t kMaxTileRows = 24;
// Int8 (FAST) jobs read their weight rows in place and have no scratch to fit: larger tiles halve
// the scheduling per row of a decode GEMV.
constexpr int64_t kInt8TileRows = 64;
constexpr int64_t kTileBytes = 256 * 1024;   // converted weight tile, kept in L2
constexpr int64_t kBlockBytes = 512 * 1024;  // activation rows of one block
constexpr int64_t kMaxBlockRows = 64;
// F32 weight rows are read in place for blocks up to this many rows; larger blocks reuse each
// row often enough that a contiguous copy (streamed once, then hot in cache) is faster.
constexpr int64_t kInPlaceF32Rows = 16;

// Activation rows in the weight type's act_type (in place or converted) and the output row of each.
struct RowSet {
  std::vector<const void*> x;
  std::vector<float*> out;
  std::vector<char> storage;  // converted activations when x is not already act_type rows
};

// Rows [begin, end) of a RowSet that multiply weight matrix (i2, i3).
struct Block {
  int64_t i2, i3;
  int64_t begin, end;
};

bool quantizes_act(const CpuTypeKernels& kern) { return kern.quantize_act != nullptr; }

// Row r of x as the kernels' activations at dst: F32 rows are loaded directly, others through float.
void convert_activation(const Tensor& x, int64_t r, const CpuTypeKernels& kern, char* dst) {
  int64_t i1, i2, i3;
  unravel_row(x, r, i1, i2, i3);
  const DType act = kern.act_type;
  if (!quantizes_act(kern) && act == DType::F32) return load_row(x, i1, i2, i3, reinterpret_cast<float*>(dst));
  std::vector<float> row(static_cast<size_t>(x.ne[0]));
  load_row(x, i1, i2, i3, row.data());
  if (quantizes_act(kern)) return kern.quantize_act(row.data(), dst, x.ne[0]);
  from_float(act, row.data(), dst, x.ne[0]);
}

// Rows of x in (i3, i2, i1) order as the kernels' activation rows, converting when needed.
std::vector<const void*> activation_rows(const Tensor& x, const CpuTypeKernels& kern, std::vector<char>& storage) {
  const int64_t n = nrows(x), k = x.ne[0];
  std::vector<const void*> rows(static_cast<size_t>(n));
  const bool in_place = !quantizes_act(kern) && kern.act_type == DType::F32 && is_f32_rows(x);
  const auto rb = quantizes_act(kern) ? kern.act_row_bytes(k) : static_cast<int64_t>(row_bytes(kern.act_type, k));
  if (!in_place) storage.resize(static_cast<size_t>(n * rb));
  parallel_for(n, !in_place && n * k >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    for (int64_t r = r_begin; r < r_end; ++r) {
      if (in_place) {
        int64_t i1, i2, i3;
        unravel_row(x, r, i1, i2, i3);
        rows[r] = elem_ptr(x, 0, i1, i2, i3);
      } else {
        convert_activation(x, r, kern, storage.data() + r * rb);
        rows[r] = storage.data() + r * rb;
      }
    }
  });
  return rows;
}

// Appends [begin, end) as blocks of at most max_rows rows.
void add_blocks(std::vector<Block>& blocks, int64_t i2, int64_t i3, int64_t begin, int64_t end, int64_t max_rows) {
  for (int64_t b = begin; b < end; b += max_rows) blocks.push_back({i2, i3, b, std::min(end, b + max_rows)});
}

// Weight rows per job: a multiple of both register tiles (rows read in place, converted rows)
// that fits kTileBytes once converted.
int64_t tile_rows(int64_t k) {
  const int64_t g = std::lcm(dot_tile_shape().w_rows, slab_tile_shape().w_rows);
  const int64_t fit = kTileBytes / (k * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(fit, g, kMaxTileRows) / g * g;
}

int64_t block_rows(int64_t k) {
  return std::clamp<int64_t>(kBlockBytes / (k * static_cast<int64_t>(sizeof(float))), 4, kMaxBlockRows);
}

// F16 (with F16C) and BF16 weights become floats in one or two instructions per vector, cheaper
// than a pass that converts each tile into scratch and reads it back: they are always read in place.
bool converts_in_register(DType t) {
#if defined(__F16C__)
  if (t == DType::F16) return true;
#endif
  return t == DType::BF16;
}

// Blocks this small read dense weight rows in place (converting in registers) instead of
// converting each row once into scratch. Activations that are not F32 leave no choice.
bool reads_in_place(const Tensor& w, const CpuTypeKernels& kern, int64_t block_rows) {
  if (quantizes_act(kern) || kern.act_type != DType::F32) {
    GL_ASSERT(has_dense_rows(w), "[mul_mat] weights with quantized activations need dense rows");
    return true;
  }
  if (!has_dense_rows(w)) return false;
  if (converts_in_register(w.type)) return true;
  return block_rows <= (w.type == DType::F32 ? kInPlaceF32Rows : dot_tile_shape().x_rows);
}

// Weight rows n0 .. n0+nw-1 of matrix (b.i2, b.i3) times the activation rows of block b.
void run_job(const Tensor& w, const CpuTypeKernels& kern, const Block& b, int64_t n0, int nw, float* scratch,
             const RowSet& rs) {
  const int64_t k = w.ne[0], nx = b.end - b.begin;
  const void* const* x = rs.x.data() + b.begin;
  float* const* out = rs.out.data() + b.begin;
  const void* rows[std::max(kMaxTileRows, kInt8TileRows)];
  if (reads_in_place(w, kern, nx)) {
    for (int i = 0; i < nw; ++i) rows[i] = elem_ptr(w, 0, n0 + i, b.i2, b.i3);
    kern.dot_rows(rows, nw, x, nx, k, out, n0);
    return;
  }
  const bool dense = has_dense_rows(w);
  for (int i = 0; i < nw; ++i) {
    float* dst = scratch + i * k;
    if (dense) {
      kern.row_to_f32(elem_ptr(w, 0, n0 + i, b.i2, b.i3), dst, k);
    } else {
      load_row(w, n0 + i, b.i2, b.i3, dst);
    }
    rows[i] = dst;
  }
  cpu_type_kernels(DType::F32).dot_rows(rows, nw, x, nx, k, out, n0);
}

// Every (block, weight tile) job; threads take consecutive tiles of the same block.
void run_blocks(const Tensor& w, const CpuTypeKernels& kern, const std::vector<Block>& blocks, const RowSet& rs) {
  const int64_t k = w.ne[0], n = w.ne[1];
  const int64_t tile = quantizes_act(kern) ? kInt8TileRows : tile_rows(k);
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t jobs = static_cast<int64_t>(blocks.size()) * tiles;
  bool needs_scratch = false;
  int64_t macs = 0;
  for (const Block& b : blocks) {
    needs_scratch = needs_scratch || !reads_in_place(w, kern, b.end - b.begin);
    macs += (b.end - b.begin) * n * k;
  }
  parallel_for(jobs, jobs > 1 && macs >= kParallelMinMacs, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> scratch(needs_scratch ? static_cast<size_t>(tile * k) : 0);
    for (int64_t job = r_begin; job < r_end; ++job) {
      const int64_t n0 = job % tiles * tile;
      run_job(w, kern, blocks[static_cast<size_t>(job / tiles)], n0, static_cast<int>(std::min(tile, n - n0)),
              scratch.data(), rs);
    }
  });
}

float* out_row(const Tensor& dst, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<float*>(elem_ptr(dst, 0, i1, i2, i3));
}

// Expert id of slot (u, t), checked against the expert count.
int64_t expert_id(const Tensor& ids, int64_t u, int64_t t, int64_t n_experts) {
  const int32_t e = *reinterpret_cast<const int32_t*>(elem_ptr(ids, u, t, 0, 0));
  GL_ASSERT(e >= 0 && e < n_experts,
            fmt::format("[mul_mat_id] ids[{}, {}] = {} is not an expert in [0, {})", u, t, e, n_experts).c_str());
  return e;
}

}  // namespace

void mul_mat(Tensor& dst, Precision precision) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  GL_ASSERT(dst.type == DType::F32 && dst.nb[0] == sizeof(float), "[mul_mat] dst must be F32 with dense rows");
  const int64_t m = x.ne[1], b2 = x.ne[2], b3 = x.ne[3];
  const int64_t r2 = b2 / w.ne[2], r3 = b3 / w.ne[3];
  const CpuTypeKernels& kern = cpu_type_kernels(w.type, precision);
  GL_ASSERT(kern.dot_rows, "[mul_mat] no CPU dot product for this weight type");
  RowSet rs;
  rs.x = activation_rows(x, kern, rs.storage);
  rs.out.resize(rs.x.size());
  for (int64_t r = 0; r < nrows(x); ++r) rs.out[r] = out_row(dst, r % m, r / m % b2, r / (m * b2));
  // x rows are in (i3, i2, i1) order, so the r2 batches sharing a weight matrix are adjacent.
  std::vector<Block> blocks;
  const int64_t max_rows = block_rows(x.ne[0]);
  for (int64_t i3 = 0; i3 < b3; ++i3)
    for (int64_t w2 = 0; w2 < w.ne[2]; ++w2) {
      const int64_t begin = (i3 * b2 + w2 * r2) * m;
      add_blocks(blocks, w2, i3 / r3, begin, begin + r2 * m, max_rows);
    }
  run_blocks(w, kern, blocks, rs);
}

void mul_mat_id(Tensor& dst, Precision precision) {
  const Tensor& experts = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  GL_ASSERT(dst.type == DType::F32 && dst.nb[0] == sizeof(float), "[mul_mat_id] dst must be F32 with dense rows");
  const int64_t n_experts = experts.ne[2], n_used = ids.ne[0], n_tokens = ids.ne[1], x1 = x.ne[1];
  const CpuTypeKernels& kern = cpu_type_kernels(experts.type, precision);
  GL_ASSERT(kern.dot_rows, "[mul_mat_id] no CPU dot product for this weight type");
  std::vector<char> storage;
  const std::vector<const void*> xrows = activation_rows(x, kern, storage);
  // Counting sort of the (u, t) slots by expert, so each expert's rows are converted once.
  std::vector<int64_t> count(static_cast<size_t>(n_experts) + 1, 0);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t u = 0; u < n_used; ++u) ++count[expert_id(ids, u, t, n_experts) + 1];
  for (int64_t e = 0; e < n_experts; ++e) count[e + 1] += count[e];
  RowSet rs;
  rs.x.resize(static_cast<size_t>(n_used * n_tokens));
  rs.out.resize(rs.x.size());
  std::vector<int64_t> next(count.begin(), count.end() - 1);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t u = 0; u < n_used; ++u) {
      const int64_t slot = next[expert_id(ids, u, t, n_experts)]++;
      rs.x[slot] = xrows[t * x1 + u % x1];
      rs.out[slot] = out_row(dst, u, t, 0);
    }
  std::vector<Block> blocks;
  const int64_t max_rows = block_rows(x.ne[0]);
  for (int64_t e = 0; e < n_experts; ++e) add_blocks(blocks, e, 0, count[e], count[e + 1], max_rows);
  run_blocks(experts, kern, blocks, rs);
}

void mul_mat_reference(Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const int64_t k = w.ne[0], r2 = x.ne[2] / w.ne[2], r3 = x.ne[3] / w.ne[3];
  std::vector<float> wr(static_cast<size_t>(k)), xr(static_cast<size_t>(k));
  for (int64_t i3 = 0; i3 < dst.ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < dst.ne[1]; ++i1) {
        load_row(x, i1, i2, i3, xr.data());
        for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0) {
          load_row(w, i0, i2 / r2, i3 / r3, wr.data());
          double s = 0.0;
          for (int64_t kk = 0; kk < k; ++kk) s += static_cast<double>(wr[kk]) * xr[kk];
          *reinterpret_cast<float*>(elem_ptr(dst, i0, i1, i2, i3)) = static_cast<float>(s);
        }
      }
}

void mul_mat_id_reference(Tensor& dst) {
  const Tensor& experts = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  const int64_t k = experts.ne[0];
  std::vector<float> wr(static_cast<size_t>(k)), xr(static_cast<size_t>(k));
  for (int64_t t = 0; t < ids.ne[1]; ++t)
    for (int64_t u = 0; u < ids.ne[0]; ++u) {
      const int64_t e = expert_id(ids, u, t, experts.ne[2]);
      load_row(x, u % x.ne[1], t, 0, xr.data());
      for (int64_t n = 0; n < experts.ne[1]; ++n) {
        load_row(experts, n, e, 0, wr.data());
        double s = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) s += static_cast<double>(wr[kk]) * xr[kk];
        *reinterpret_cast<float*>(elem_ptr(dst, n, u, t, 0)) = static_cast<float>(s);
      }
    }
}

}  // namespace gl::cpu
