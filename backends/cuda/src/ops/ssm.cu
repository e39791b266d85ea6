// ssm.cu - SSM_CONV on CUDA, and which Gated DeltaNet nodes the CUDA kernels take (supports_ssm).
//
// Why this shape: the causal depthwise conv is Kc (4) multiply-adds per output and pure bandwidth,
// so one thread per output (c, t), channels fastest for coalesced reads of xs columns. xs is read
// through its strides (it is usually a concat or a view of the conv window).
// out[c, t] = sum_j w[j, c] * xs[c, t + j], summed in tap order j = 0 .. Kc-1 like the CPU kernel.
// Fused with its neighbours (the GDN input path concat(state, new) -> ssm_conv -> silu), one kernel
// reads the two halves of the window directly and writes all three results.
#include <algorithm>
#include <initializer_list>

#include "chain.cuh"
#include "kernels.cuh"
#include "mm_utils.cuh"
#include "warp_norm.cuh"

namespace gl::cuda {
namespace {

using mm::TView;

constexpr int kConvThreads = 256;

__global__ void ssm_conv_kernel(TView xs, TView w, float* out, int64_t channels, int64_t n_t) {
  pdl_trigger();
  const int64_t kc = w.ne[0];
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < channels * n_t;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % channels, t = i / channels;
    float acc = 0.0f;
    for (int64_t j = 0; j < kc; ++j)
      acc = fmaf(mm::load_scalar(w.type, w.data + j * w.nb[0] + c * w.nb[1]),
                 mm::load_scalar(xs.type, xs.data + c * xs.nb[0] + (t + j) * xs.nb[1]), acc);
    out[i] = acc;
  }
}

bool is_plain_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The fused window: a [C, Kc-1] (carried state) then b [C, T] (new columns), all F32.
struct ConvWindow {
  TensorArg a, b, w, window, conv, act;
};

__device__ __forceinline__ float& at(const TensorArg& t, int64_t i0, int64_t i1) {
  return *reinterpret_cast<float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1]);
}

// Thread (c, t): the output column t of channel c, window column Kc-1+t, and the carried columns
// u < Kc-1 with u % T == t.
__global__ void conv_window_kernel(ConvWindow k, int64_t channels, int64_t n_t) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const int64_t kc1 = k.a.ne[1];
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < channels * n_t;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % channels, t = i / channels;
    float acc = 0.0f;
    for (int64_t j = 0; j <= kc1; ++j) {
      const int64_t u = t + j;
      const float x = u < kc1 ? at(k.a, c, u) : at(k.b, c, u - kc1);
      acc = fmaf(at(k.w, j, c), x, acc);
    }
    at(k.window, c, kc1 + t) = at(k.b, c, t);
    for (int64_t u = t; u < kc1; u += n_t) at(k.window, c, u) = at(k.a, c, u);
    at(k.conv, c, t) = acc;
    at(k.act, c, t) = silu_f(acc);
  }
}

bool f32(const Tensor& t) { return t.type == DType::F32; }

// ---- the window path with the q / k L2 norm and q's scale, and the carried columns ------------

// The model's next two nodes: L2_NORM over the first `rows` head rows of dk channels of the
// activation ([dk, rows, T], rows 2 Hk: q then k), then SCALE of its first q_rows (Hk).
struct QkNorm {
  TensorArg l2, q;  // [dk, rows, T] and [dk, q_rows, T], dense F32
  int64_t dk, rows, q_rows;
  double eps;
  float scale, bias;
};

constexpr int kNormLanes = 32;
static_assert(kNormLanes == mm::kWarp, "warp_sum_squares: a row is one full warp");
constexpr int kNormElems = 8;  // per lane: heads up to 256 channels (short_norm_kernel's limit)
constexpr int kNormWarps = kConvThreads / kNormLanes;

__device__ __forceinline__ float& at3(const TensorArg& t, int64_t i0, int64_t i1, int64_t i2) {
  return *reinterpret_cast<float*>(t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]);
}

// Taps of the causal conv the fused kernel takes (the model's Kc; other sizes run unfused).
constexpr int kTaps = 4;

// Channel c, column t of conv_window_kernel's work, in two halves so that a warp issues every load
// of its channels before any store (a store may alias a later load, which would then wait for it):
// the taps' window values x[j] = window[c, t + j] and weights, then the sum, the stores and the
// activation.
struct Taps {
  float x[kTaps], w[kTaps];
};

__device__ __forceinline__ void load_taps(const ConvWindow& k, int64_t c, int64_t t, Taps& p) {
  constexpr int64_t kc1 = kTaps - 1;
#pragma unroll
  for (int j = 0; j < kTaps; ++j) {
    const int64_t u = t + j;
    p.x[j] = u < kc1 ? at(k.a, c, u) : at(k.b, c, u - kc1);
    p.w[j] = at(k.w, j, c);
  }
}

// The sum in tap order (as conv_window_kernel), the window's columns, conv and activation. With
// `carry` (one new column, t = 0) also the window's last Kc-1 columns into the carried state k.a
// (the CPY at the end of the step), from the taps: x[j] is a[c, j] for j < Kc-1 and x[Kc-1] the
// new column.
__device__ __forceinline__ float conv_store(const ConvWindow& k, int64_t c, int64_t t, int64_t n_t, bool carry,
                                            const Taps& p) {
  constexpr int kc1 = kTaps - 1;
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kTaps; ++j) acc = fmaf(p.w[j], p.x[j], acc);
  at(k.window, c, kc1 + t) = p.x[kc1];
  if (n_t == 1) {
#pragma unroll
    for (int u = 0; u < kc1; ++u) at(k.window, c, u) = p.x[u];
  } else {
    for (int64_t u = t; u < kc1; u += n_t) at(k.window, c, u) = at(k.a, c, u);
  }
  if (carry)
#pragma unroll
    for (int j = 0; j < kc1; ++j) at(k.a, c, j) = p.x[j + 1];
  at(k.conv, c, t) = acc;
  const float y = silu_f(acc);
  at(k.act, c, t) = y;
  return y;
}

// Warp w < rows * T: head row w % rows of column w / rows, lane l its channels l + 32 e, then the
// row's L2 norm as short_norm_kernel sums it (per lane in e order, then the xor tree: its zero
// terms past dk add nothing) and, for a q row, the SCALE node's arithmetic. The other warps: 32
// value channels of one column each.
template <int E>  // channels per lane: dk / 32
__global__ void __launch_bounds__(kConvThreads)
    conv_norm_kernel(ConvWindow k, QkNorm n, bool carry, int64_t channels, int64_t n_t) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const int lane = static_cast<int>(threadIdx.x) % kNormLanes;
  const int64_t gw = static_cast<int64_t>(blockIdx.x) * kNormWarps + threadIdx.x / kNormLanes;
  const int64_t qk_warps = n.rows * n_t, qk_channels = n.rows * n.dk;
  if (gw >= qk_warps) {
    const int64_t per_t = (channels - qk_channels + kNormLanes - 1) / kNormLanes, v = gw - qk_warps;
    const int64_t t = v / per_t, c = qk_channels + (v % per_t) * kNormLanes + lane;
    if (t >= n_t || c >= channels) return;
    Taps p;
    load_taps(k, c, t, p);
    conv_store(k, c, t, n_t, carry, p);
    return;
  }
  const int64_t r = gw % n.rows, t = gw / n.rows;
  Taps p[E];
#pragma unroll
  for (int e = 0; e < E; ++e) load_taps(k, r * n.dk + lane + kNormLanes * e, t, p[e]);
  float y[E];
#pragma unroll
  for (int e = 0; e < E; ++e) y[e] = conv_store(k, r * n.dk + lane + kNormLanes * e, t, n_t, carry, p[e]);
  const double inv = 1.0 / sqrt(warp_sum_squares(y) + n.eps);
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int64_t i0 = lane + kNormLanes * e;
    const float v = static_cast<float>(static_cast<double>(y[e]) * inv);
    at3(n.l2, i0, r, t) = v;
    if (r < n.q_rows) at3(n.q, i0, r, t) = apply_unary<UnaryOp::SCALE>(v, n.scale, n.bias);
  }
}

// The next node that is not a view, from nodes[i] on; nodes.size() when none.
size_t skip_views(std::span<Tensor* const> nodes, size_t i) {
  while (i < nodes.size() && is_view_op(nodes[i]->op)) ++i;
  return i;
}

// x is a view of `of` from its first byte with rows of dk F32 elements, `rows` to a column, and
// the column stride col_bytes, T columns.
bool head_rows_of(const Tensor& x, const Tensor& of, int64_t col_bytes, int64_t n_t) {
  return x.view_src == &of && x.view_offs == 0 && x.type == DType::F32 && x.nb[0] == sizeof(float) &&
         static_cast<int64_t>(x.nb[1]) == x.ne[0] * static_cast<int64_t>(sizeof(float)) &&
         static_cast<int64_t>(x.nb[2]) == col_bytes && x.ne[2] == n_t && x.ne[3] == 1;
}

// Every pair of the fused results may share memory only as the same elements: with one column
// every result is indexed by channel (flat), so equal addresses are the same element, written in
// node order by one thread; conv and act always have one layout.
bool outputs_ok(std::initializer_list<const Tensor*> outs, int64_t n_t, const Tensor& conv, const Tensor& act) {
  for (const Tensor* p : outs)
    for (const Tensor* q : outs) {
      if (p >= q || disjoint(*p, *q)) continue;
      const bool same = p->data == q->data && is_contiguous(*p) && is_contiguous(*q);
      const bool conv_act = (p == &conv && q == &act) || (p == &act && q == &conv);
      if (!same || (n_t != 1 && !conv_act)) return false;
    }
  return true;
}

// The CPY after the norms that puts the window's last Kc-1 columns back into the carried state a,
// with nothing between touching a; nullptr when there is none (or more than one new column).
const Tensor* carried_copy(std::span<Tensor* const> nodes, size_t from, const Tensor& cat, const Tensor& a,
                           const Tensor& b, const Tensor& w, int64_t n_t) {
  // a becomes a result: no other thread may read it as b or w.
  if (n_t != 1 || a.view_src || !is_contiguous(a) || !f32(a) || !disjoint(a, b) || !disjoint(a, w)) return nullptr;
  const size_t offs = static_cast<size_t>(n_t * cat.nb[1]);
  for (size_t i = from; i < nodes.size(); ++i) {
    const Tensor& c = *nodes[i];
    const Tensor* src = c.src[0];
    if (c.op == Op::CPY && c.src[1] == &a && c.data == a.data && src && src->view_src == &cat &&
        src->view_offs == offs && f32(*src) && same_shape(*src, a) && is_contiguous(*src))
      return &c;
    if (touches(c, a)) return nullptr;
  }
  return nullptr;
}

// conv_window's shapes, and its results against its inputs.
bool conv_window_fits(const Tensor& cat, const Tensor& conv, const Tensor& act) {
  if (cat.op != Op::CONCAT || conv.op != Op::SSM_CONV || act.op != Op::SILU) return false;
  if (conv.src[0] != &cat || act.src[0] != &conv || cat.p<ConcatParams>().dim != 1) return false;
  const Tensor& a = *cat.src[0];
  const Tensor& b = *cat.src[1];
  const Tensor& w = *conv.src[1];
  const Tensor* ins[] = {&a, &b, &w};
  const Tensor* outs[] = {&cat, &conv, &act};
  for (int i = 0; i < 3; ++i)
    for (const Tensor* t : {ins[i], outs[i]})
      if (!f32(*t) || t->ne[2] != 1 || t->ne[3] != 1) return false;
  if (a.ne[1] + 1 != w.ne[0] || !same_shape(conv, act) || conv.ne[1] != b.ne[1]) return false;
  // Other threads read the inputs throughout: no result may touch them, except that with one new
  // column (decode) the conv and activation may take the new column's own memory (thread c reads
  // b[c] before it stores conv[c]); the activation may take the conv's memory (stored twice from a
  // register).
  const int64_t n_t = conv.ne[1];
  for (const Tensor* out : outs)
    for (const Tensor* in : ins) {
      const bool own_column = n_t == 1 && in == &b && out != &cat && safe_to_fuse(*out, b);
      if (!disjoint(*out, *in) && !own_column) return false;
    }
  return disjoint(cat, conv) && disjoint(cat, act) && safe_to_fuse(act, conv);
}

}  // namespace

bool conv_window(const Ctx& ctx, Tensor& cat, Tensor& conv, Tensor& act) {
  if (!conv_window_fits(cat, conv, act)) return false;
  const Tensor& a = *cat.src[0];
  const Tensor& b = *cat.src[1];
  const Tensor& w = *conv.src[1];
  const int64_t channels = conv.ne[0], n_t = conv.ne[1], n = channels * n_t;
  if (n == 0) return true;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(mm::ceil_div<int64_t>(n, kConvThreads), 65535));
  conv_window_kernel<<<blocks, kConvThreads, 0, ctx.stream>>>(
      ConvWindow{arg(a), arg(b), arg(w), arg(cat), arg(conv), arg(act)}, channels, n_t);
  return true;
}

int conv_window_norm(const Ctx& ctx, std::span<Tensor* const> nodes, const Tensor** carried) {
  *carried = nullptr;
  if (nodes.size() < 5) return 0;
  Tensor& cat = *nodes[0];
  Tensor& conv = *nodes[1];
  Tensor& act = *nodes[2];
  if (!conv_window_fits(cat, conv, act)) return 0;
  const size_t il2 = skip_views(nodes, 3);
  const size_t isc = il2 < nodes.size() ? skip_views(nodes, il2 + 1) : nodes.size();
  if (isc >= nodes.size()) return 0;
  Tensor& l2 = *nodes[il2];
  Tensor& sc = *nodes[isc];
  if (l2.op != Op::L2_NORM || sc.op != Op::SCALE) return 0;
  const int64_t channels = conv.ne[0], n_t = conv.ne[1];
  const Tensor& x = *l2.src[0];
  const Tensor& xq = *sc.src[0];
  const int64_t dk = x.ne[0], rows = x.ne[1], q_rows = xq.ne[1];
  const int64_t e = dk / kNormLanes;
  if (!head_rows_of(x, act, static_cast<int64_t>(act.nb[1]), n_t) || dk % kNormLanes != 0 ||
      (e != 1 && e != 2 && e != 4 && e != kNormElems) || rows * dk >= channels || !f32(act) ||
      act.nb[0] != sizeof(float))
    return 0;
  if (!head_rows_of(xq, l2, static_cast<int64_t>(l2.nb[2]), n_t) || xq.ne[0] != dk || q_rows > rows) return 0;
  if (!f32(l2) || !is_contiguous(l2) || !same_shape(l2, x) || !f32(sc) || !is_contiguous(sc) || !same_shape(sc, xq))
    return 0;
  // The two new results against the inputs (as conv_window_fits checks conv and act).
  const Tensor& a = *cat.src[0];
  const Tensor& b = *cat.src[1];
  const Tensor& w = *conv.src[1];
  if (w.ne[0] != kTaps) return 0;
  for (const Tensor* out : {&l2, &sc})
    for (const Tensor* in : {&a, &b, &w}) {
      const bool own_column = n_t == 1 && in == &b && out->data == b.data && is_contiguous(b);
      if (!disjoint(*out, *in) && !own_column) return 0;
    }
  if (!disjoint(cat, l2) || !disjoint(cat, sc) || !outputs_ok({&conv, &act, &l2, &sc}, n_t, conv, act)) return 0;
  const Tensor* cpy = carried_copy(nodes, isc + 1, cat, a, b, w, n_t);
  const int64_t qk_warps = rows * n_t;
  const int64_t v_warps = (channels - rows * dk + kNormLanes - 1) / kNormLanes * n_t;
  const int64_t blocks = (qk_warps + v_warps + kNormWarps - 1) / kNormWarps;
  if (blocks > 0) {
    const ScaleParams& p = sc.p<ScaleParams>();
    const QkNorm n{arg(l2), arg(sc), dk, rows, q_rows, static_cast<double>(l2.p<NormParams>().eps), p.scale, p.bias};
    const ConvWindow k{arg(a), arg(b), arg(w), arg(cat), arg(conv), arg(act)};
    const unsigned grid = static_cast<unsigned>(blocks);
    switch (dk / kNormLanes) {
      case 1: conv_norm_kernel<1><<<grid, kConvThreads, 0, ctx.stream>>>(k, n, cpy != nullptr, channels, n_t); break;
      case 2: conv_norm_kernel<2><<<grid, kConvThreads, 0, ctx.stream>>>(k, n, cpy != nullptr, channels, n_t); break;
      case 4: conv_norm_kernel<4><<<grid, kConvThreads, 0, ctx.stream>>>(k, n, cpy != nullptr, channels, n_t); break;
      default: conv_norm_kernel<8><<<grid, kConvThreads, 0, ctx.stream>>>(k, n, cpy != nullptr, channels, n_t); break;
    }
  }
  *carried = cpy;
  return static_cast<int>(isc + 1);
}

void ssm_conv(const Ctx& ctx, Tensor& dst) {
  const Tensor& xs = *dst.src[0];
  const Tensor& w = *dst.src[1];
  const int64_t channels = dst.ne[0], n_t = dst.ne[1];
  const int64_t n = channels * n_t;
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(mm::ceil_div<int64_t>(n, kConvThreads), 65535));
  ssm_conv_kernel<<<blocks, kConvThreads, 0, ctx.stream>>>(mm::view_of(xs), mm::view_of(w),
                                                           static_cast<float*>(dst.data), channels, n_t);
  GL_CUDA_CHECK(cudaGetLastError());
}

bool supports_ssm(const Tensor& node) {
  if (node.type != DType::F32 || !is_contiguous(node)) return false;
  if (node.op == Op::SSM_CONV) return is_plain_float(node.src[0]->type) && is_plain_float(node.src[1]->type);
  if (node.op != Op::GATED_DELTA_RULE) return false;
  for (int i = 0; i < 6; ++i)
    if (!is_plain_float(node.src[i]->type)) return false;
  return node.src[0]->ne[0] <= mm::kMaxGdrDk;
}

}  // namespace gl::cuda
