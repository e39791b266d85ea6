// matmul_gemv.cu - MUL_MAT / MUL_MAT_ID for a few activation rows (decode, MTP verify) with float
// activations: the entry points of gemv_kernel.cuh, which says how the work is laid out and why
// results are batch invariant. Under Precision::FAST the types of q8_gemv_type() take int8
// activations instead (matmul_gemv_q8.cu).
#include "chain.cuh"
#include "gemv_kernel.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "q8_input.cuh"

namespace gl::cuda::mm {
namespace {

template <int M, class Rows, class Epi = NoEpilogue>
void launch_dtype(const Ctx& ctx, DType wt, const WDesc& w, const XDesc& xd, const Rows& rows, const Epi& epi = {}) {
  const F32Act x{xd};
  if (dtype_traits(wt).is_quant)
    return with_weight_quant_host(wt, [&](auto q) { launch<decltype(q)::kType, M>(ctx, w, x, rows, epi); });
  if (wt == DType::F32) return launch<DType::F32, M>(ctx, w, x, rows, epi);
  if (wt == DType::F16) return launch<DType::F16, M>(ctx, w, x, rows, epi);
  if (wt == DType::BF16) return launch<DType::BF16, M>(ctx, w, x, rows, epi);
  fail(__FILE__, __LINE__, "gemv", "unsupported weight dtype");
}

}  // namespace

namespace {

// Under Precision::FAST the types of q8_gemv_type() take int8 activations, quantized into the
// node's workspace (sized by mul_mat_workspace / mul_mat_id_workspace at either precision).
bool int8_activations(const Ctx& ctx, DType wt, const Tensor& dst) {
  if (ctx.precision != Precision::FAST || !q8_gemv_type(wt)) return false;
  GL_ASSERT(dst.workspace != nullptr, "cuda gemv: int8 activations without their planned workspace");
  return true;
}

template <class Epi>
void gemv_mul_mat_with(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst, const Epi& epi) {
  const int64_t m = x.ne[1];
  const int rows_per_group = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : kGemvMaxRows;
  MulMatRows rows{static_cast<const char*>(w.data),
                  static_cast<int64_t>(w.nb[2]),
                  static_cast<int64_t>(w.nb[3]),
                  x.ne[2] / w.ne[2],
                  x.ne[3] / w.ne[3],
                  static_cast<const char*>(x.data),
                  static_cast<int64_t>(x.nb[1]),
                  static_cast<int64_t>(x.nb[2]),
                  static_cast<int64_t>(x.nb[3]),
                  static_cast<float*>(dst.data),
                  w.ne[1],
                  m,
                  x.ne[2],
                  x.ne[3],
                  ceil_div<int64_t>(m, rows_per_group)};
  check_quant_alignment(w);
  WDesc wd = weight_desc(w, {static_cast<int64_t>(w.nb[2]), static_cast<int64_t>(w.nb[3])});
  wd.early = ctx.written && ctx.written->untouched(w);
  if (int8_activations(ctx, w.type, dst)) {
    char* q = static_cast<char*>(dst.workspace);
    // Only a shared workspace is known to be untouched since another product of x quantized it.
    Q8Memo* memo = mul_mat_workspace_share(dst) == &x ? ctx.q8 : nullptr;
    if (!memo || !memo->holds(q, x)) {
      quantize_rows_q8(ctx, x, q);
      if (memo) *memo = {q, &x, x.data};
    }
    const int64_t s = q8_row_stride(x.ne[0]);
    rows.x = q, rows.x_nb1 = s, rows.x_nb2 = s * m, rows.x_nb3 = s * m * x.ne[2];
    return launch_q8(ctx, w.type, rows_per_group, wd, rows, epi);
  }
  const XDesc xd =
      act_desc(x, {static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2]), static_cast<int64_t>(x.nb[3])});
  switch (rows_per_group) {
    case 1: return launch_dtype<1>(ctx, w.type, wd, xd, rows, epi);
    case 2: return launch_dtype<2>(ctx, w.type, wd, xd, rows, epi);
    case 4: return launch_dtype<4>(ctx, w.type, wd, xd, rows, epi);
    default: return launch_dtype<kGemvMaxRows>(ctx, w.type, wd, xd, rows, epi);
  }
}

}  // namespace

void gemv_mul_mat(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst) {
  gemv_mul_mat_with(ctx, w, x, dst, NoEpilogue{});
}

void gemv_mul_mat_chain(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst, const Chain& chain) {
  GL_ASSERT(dst.ne[2] == 1 && dst.ne[3] == 1, "gemv epilogue: a 2-D product only");
  gemv_mul_mat_with(ctx, w, x, dst, chain);
}

void gemv_mul_mat_id(const Ctx& ctx, const Tensor& experts, const Tensor& x, const Tensor& ids, Tensor& dst,
                     const IdTiles* tiles) {
  IdRows rows{static_cast<const char*>(experts.data),
              static_cast<int64_t>(experts.nb[2]),
              experts.ne[2],
              static_cast<const char*>(x.data),
              static_cast<int64_t>(x.nb[1]),
              static_cast<int64_t>(x.nb[2]),
              x.ne[1],
              static_cast<const char*>(ids.data),
              static_cast<int64_t>(ids.nb[0]),
              static_cast<int64_t>(ids.nb[1]),
              ids.ne[0],
              ids.ne[1],
              static_cast<float*>(dst.data),
              experts.ne[1],
              tiles ? *tiles : IdTiles{}};
  check_quant_alignment(experts);
  const WDesc wd = weight_desc(experts, {static_cast<int64_t>(experts.nb[2])});
  if (int8_activations(ctx, experts.type, dst)) {
    char* q = static_cast<char*>(dst.workspace) + mul_mat_id_route_bytes(dst);
    quantize_rows_q8(ctx, x, q);
    const int64_t s = q8_row_stride(x.ne[0]);
    rows.x = q, rows.x_nb1 = s, rows.x_nb2 = s * x.ne[1];
    return launch_q8(ctx, experts.type, tiles ? kGemvMaxRows : 1, wd, rows, NoEpilogue{});
  }
  const XDesc xd = act_desc(x, {static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2])});
  if (tiles) return launch_dtype<kGemvMaxRows>(ctx, experts.type, wd, xd, rows);
  launch_dtype<1>(ctx, experts.type, wd, xd, rows);
}

}  // namespace gl::cuda::mm

namespace gl::cuda {

char* q8_input_target(const Ctx& ctx, const Tensor& x, const Tensor* next) {
  if (!next || !ctx.q8 || next->op != Op::MUL_MAT || next->src[1] != &x || !next->workspace) return nullptr;
  if (ctx.precision != Precision::FAST || !mm::q8_gemv_type(next->src[0]->type) || x.ne[0] % 32 != 0) return nullptr;
  if (mul_mat_workspace_share(*next) != &x) return nullptr;
  return static_cast<char*>(next->workspace);
}

size_t q8_rows_bytes(const Tensor& x) { return static_cast<size_t>(mm::q8_row_stride(x.ne[0]) * nrows(x)); }

}  // namespace gl::cuda
