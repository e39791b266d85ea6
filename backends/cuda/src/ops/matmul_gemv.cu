// matmul_gemv.cu - MUL_MAT / MUL_MAT_ID for a few activation rows (decode, MTP verify) with float
// activations: the entry points of gemv_kernel.cuh, which says how the work is laid out and why
// results are batch invariant. Under Precision::FAST the types of q8_gemv_type() take int8
// activations instead (matmul_gemv_q8.cu).
#include "chain.cuh"
#include "gemv_launch.cuh"
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

// Points the rows (a pair's three) at int8 activation rows in q, as quantize_rows_q8 lays them out.
void use_q8_rows(MulMatRows& r, const char* q, const Tensor& x) {
  const int64_t s = q8_row_stride(x.ne[0]);
  r.x = q, r.x_nb1 = s, r.x_nb2 = s * x.ne[1], r.x_nb3 = s * x.ne[1] * x.ne[2];
}

void use_q8_rows(IdRows& r, const char* q, const Tensor& x) {
  const int64_t s = q8_row_stride(x.ne[0]);
  r.x = q, r.x_nb1 = s, r.x_nb2 = s * x.ne[1];
}

template <class Rows>
void use_q8_rows(PairRows<Rows>& p, const char* q, const Tensor& x) {
  use_q8_rows(p.gate, q, x);
  use_q8_rows(p.up, q, x);
  use_q8_rows(p.act, q, x);
}

void use_q8_rows(TwinRows& t, const char* q, const Tensor& x) {
  use_q8_rows(t.a, q, x);
  use_q8_rows(t.b, q, x);
}

int rows_per_group_of(int64_t m) { return m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : kGemvMaxRows; }

// MUL_MAT's GEMV over rows (of dst, or a pair whose first product is dst) with weights wd of type wt.
template <class Rows, class Epi>
void gemv_mul_mat_rows(const Ctx& ctx, DType wt, const WDesc& wd, const Tensor& x, Tensor& dst, Rows rows,
                       const Epi& epi) {
  const int rows_per_group = rows_per_group_of(x.ne[1]);
  if (int8_activations(ctx, wt, dst)) {
    char* q = static_cast<char*>(dst.workspace);
    // Only a shared workspace is known to be untouched since another product of x quantized it.
    Q8Memo* memo = mul_mat_workspace_share(dst) == &x ? ctx.q8 : nullptr;
    if (!memo || !memo->holds(q, x)) {
      quantize_rows_q8(ctx, x, q);
      if (memo) *memo = {q, &x, x.data};
    }
    use_q8_rows(rows, q, x);
    return launch_q8(ctx, wt, rows_per_group, wd, rows, epi);
  }
  const XDesc xd =
      act_desc(x, {static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2]), static_cast<int64_t>(x.nb[3])});
  switch (rows_per_group) {
    case 1: return launch_dtype<1>(ctx, wt, wd, xd, rows, epi);
    case 2: return launch_dtype<2>(ctx, wt, wd, xd, rows, epi);
    case 4: return launch_dtype<4>(ctx, wt, wd, xd, rows, epi);
    default: return launch_dtype<kGemvMaxRows>(ctx, wt, wd, xd, rows, epi);
  }
}

WDesc mul_mat_weights(const Ctx& ctx, const Tensor& w) {
  check_quant_alignment(w);
  WDesc wd = weight_desc(w, {static_cast<int64_t>(w.nb[2]), static_cast<int64_t>(w.nb[3])});
  wd.early = ctx.written && ctx.written->untouched(w);
  return wd;
}

template <class Epi>
void gemv_mul_mat_with(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst, const Epi& epi) {
  gemv_mul_mat_rows(ctx, w.type, mul_mat_weights(ctx, w), x, dst, mul_mat_rows(w, x, dst, rows_per_group_of(x.ne[1])),
                    epi);
}

// MUL_MAT_ID's GEMV: a slot each (tiles == nullptr) or routed tiles.
template <class Rows>
void gemv_mul_mat_id_rows(const Ctx& ctx, DType wt, const WDesc& wd, const Tensor& x, Tensor& dst, Rows rows,
                          const IdTiles* tiles) {
  if (int8_activations(ctx, wt, dst)) {
    char* q = static_cast<char*>(dst.workspace) + mul_mat_id_route_bytes(dst);
    quantize_rows_q8(ctx, x, q);
    use_q8_rows(rows, q, x);
    return launch_q8(ctx, wt, tiles ? kGemvMaxRows : 1, wd, rows, NoEpilogue{});
  }
  const XDesc xd = act_desc(x, {static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2])});
  if constexpr (!kPaired<Rows>)  // a pair is a slot each
    if (tiles) return launch_dtype<kGemvMaxRows>(ctx, wt, wd, xd, rows);
  launch_dtype<1>(ctx, wt, wd, xd, rows);
}

WDesc id_weights(const Tensor& experts) {
  check_quant_alignment(experts);
  return weight_desc(experts, {static_cast<int64_t>(experts.nb[2])});
}

// The weights of a pair: both matrices' reads vectorised only if each allows it.
WDesc pair_weights(WDesc g, const WDesc& u) {
  g.vec = g.vec && u.vec;
  g.early = g.early && u.early;
  return g;
}

}  // namespace

void gemv_mul_mat(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst) {
  gemv_mul_mat_with(ctx, w, x, dst, NoEpilogue{});
}

void gemv_mul_mat_chain(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst, const Chain& chain) {
  GL_ASSERT(dst.ne[2] == 1 && dst.ne[3] == 1, "gemv epilogue: a 2-D product only");
  gemv_mul_mat_with(ctx, w, x, dst, chain);
}

void gemv_mul_mat_twin(const Ctx& ctx, const Tensor& wa, const Tensor& wb, const Tensor& x, Tensor& a, Tensor& b,
                       const Chain& chain_a, const Chain& chain_b) {
  GL_ASSERT(a.ne[2] == 1 && a.ne[3] == 1 && x.ne[1] <= kTwinMaxRows, "gemv twin: 2-D products of a few rows");
  const int rpg = rows_per_group_of(x.ne[1]);
  static_assert(kTwinMaxRows <= 4, "rows_per_group_of gives 1, 2 or 4: one group of rows");
  const TwinRows rows{mul_mat_rows(wa, x, a, rpg), mul_mat_rows(wb, x, b, rpg)};
  const TwinChain epi{chain_a, chain_b};
  const WDesc wd = pair_weights(mul_mat_weights(ctx, wa), mul_mat_weights(ctx, wb));
  if (int8_activations(ctx, wa.type, a)) return gemv_mul_mat_rows(ctx, wa.type, wd, x, a, rows, epi);
  // Float activations: one launch shape for decode (1 row) and one for 2..4 rows (a verify of up to
  // 3 drafts; rows past the count are read, never written). The int8 path above instantiates its
  // own row counts (launch_q8).
  const XDesc xd =
      act_desc(x, {static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2]), static_cast<int64_t>(x.nb[3])});
  if (rpg == 1) return launch_dtype<1>(ctx, wa.type, wd, xd, rows, epi);
  launch_dtype<4>(ctx, wa.type, wd, xd, rows, epi);
}

void gemv_mul_mat_id(const Ctx& ctx, const Tensor& experts, const Tensor& x, const Tensor& ids, Tensor& dst,
                     const IdTiles* tiles) {
  gemv_mul_mat_id_rows(ctx, experts.type, id_weights(experts), x, dst, id_rows(experts, x, ids, dst, tiles), tiles);
}

void gemv_mul_mat_pair(const Ctx& ctx, const Tensor& wg, const Tensor& wu, const Tensor& x, Tensor& gate, Tensor& up,
                       Tensor& act) {
  const int rpg = rows_per_group_of(x.ne[1]);
  const PairRows<MulMatRows> rows{mul_mat_rows(wg, x, gate, rpg), mul_mat_rows(wu, x, up, rpg),
                                  mul_mat_rows(wg, x, act, rpg)};
  gemv_mul_mat_rows(ctx, wg.type, pair_weights(mul_mat_weights(ctx, wg), mul_mat_weights(ctx, wu)), x, gate, rows,
                    NoEpilogue{});
}

void gemv_mul_mat_id_pair(const Ctx& ctx, const Tensor& eg, const Tensor& eu, const Tensor& x, const Tensor& ids,
                          Tensor& gate, Tensor& up, Tensor& act) {
  const PairRows<IdRows> rows{id_rows(eg, x, ids, gate, nullptr), id_rows(eu, x, ids, up, nullptr),
                              id_rows(eg, x, ids, act, nullptr)};
  gemv_mul_mat_id_rows(ctx, eg.type, pair_weights(id_weights(eg), id_weights(eu)), x, gate, rows, nullptr);
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
