// norm.cu - RMS_NORM and L2_NORM, one row group per row.
//
// Why double: the CPU reference accumulates the sum of squares in double and scales each element
// by a double 1 / sqrt(denom + eps), rounding once to float; doing the same here (FP64 is cheap on
// sm_90 and the op is memory-bound) leaves only the summation order as a difference. The row is
// fully reduced before any element is written and each element is written by the thread that
// re-reads it, so dst may alias src[0].
//
// Fused with the weight: a norm whose next node multiplies it by a (broadcast) weight -- every
// RMSNorm of the model -- runs as one kernel that writes both nodes' results (the norm's too, so
// any other reader of it still finds it), with the same float multiply as the separate MUL. The
// residual add before a layer's norms joins too (add -> norm -> mul, one kernel writing all three).
#include <initializer_list>

#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "mm_utils.cuh"
#include "q8_input.cuh"
#include "warp_norm.cuh"

namespace gl::cuda {
namespace {

// Threads per row, and elements per thread kept in registers between the two passes. The second
// pass stores while the model's rows may alias the input, so a loop that re-read x (and w) from
// memory after each store waited a full memory round trip per element: a 4096-wide decode row took
// 19 us with 256 threads, 11 us with 1024 (H200 profile). Cached values are read once, up front;
// 512 threads x 8 cached elements cover a 4096-wide row within the register budget of a block.
constexpr int kNormThreads = 512;
constexpr int kCached = 8;

// The optional neighbours of a fused norm: a preceding add (sum = x + b, normalised in x's place)
// and a following multiply by a weight (m = y * w, w broadcast over y by modulo on every dim).
struct NormFusion {
  TensorArg b{}, sum{};
  TensorArg w{}, m{};
};

// y = x / sqrt(ss / n + eps) (rms) or x / sqrt(ss + eps) (l2), per row; with kAdd the row is
// x + b (stored to sum first; rows fit the register cache, see norm_add_mul), with kMul also m.
template <bool kAdd, bool kMul>
__global__ void __launch_bounds__(kNormThreads)
    norm_kernel(TensorArg x, TensorArg y, int64_t rows, bool rms, double eps, NormFusion f) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  __shared__ double scratch[32];
  const int64_t ne0 = x.ne[0];
  const int64_t step = blockDim.x;
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const int64_t n = r < rows ? ne0 : 0;  // a row group past the end still joins the reduction
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (r < rows) unravel_row(y.ne, r, i1, i2, i3);
    const char* rx = row_ptr(x, i1, i2, i3);
    double xs[kCached];
    double ss = 0.0;
    float xv[kCached], bv[kCached];  // every load first: a store between them would serialise them
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      xv[k] = i0 < n ? load_plain(x.type, rx + i0 * x.nb[0]) : 0.0f;
      if constexpr (kAdd) bv[k] = i0 < n ? load_plain(f.b.type, row_ptr(f.b, i1, i2, i3) + i0 * f.b.nb[0]) : 0.0f;
    }
    // The weight too, before any store and the reduction: one memory round trip for all three.
    const TensorArg& w = f.w;
    const char* rw = kMul ? row_ptr(w, i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]) : nullptr;
    char* rm = kMul ? row_ptr(f.m, i1, i2, i3) : nullptr;
    float ws[kCached];
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      ws[k] = kMul && i0 < n ? load_plain(w.type, rw + (i0 % w.ne[0]) * w.nb[0]) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      if constexpr (kAdd) {  // the separate ADD's float sum, rounded through its dtype
        const float v = xv[k] + bv[k];
        if (i0 < n) store_plain(f.sum.type, row_ptr(f.sum, i1, i2, i3) + i0 * f.sum.nb[0], v);
        xv[k] = i0 < n ? round_to(f.sum.type, v) : 0.0f;
      }
      xs[k] = xv[k];
      ss += xs[k] * xs[k];
    }
    for (int64_t i0 = threadIdx.x + kCached * step; !kAdd && i0 < n; i0 += step) {  // rows longer than the cache
      const double v = load_plain(x.type, rx + i0 * x.nb[0]);
      ss += v * v;
    }
    ss = group_reduce(ss, SumOp{}, scratch);
    const double denom = rms ? ss / static_cast<double>(ne0) : ss;
    const double inv = 1.0 / sqrt(denom + eps);
    char* ry = row_ptr(y, i1, i2, i3);
    // Every load of the cached elements happened above, so no store below can feed a load.
    auto put = [&](int64_t i0, double v, float wv) {
      const float yv = static_cast<float>(v * inv);
      store_plain(y.type, ry + i0 * y.nb[0], yv);
      if constexpr (kMul) store_plain(f.m.type, rm + i0 * f.m.nb[0], round_to(y.type, yv) * wv);
    };
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      if (i0 < n) put(i0, xs[k], ws[k]);
    }
    for (int64_t i0 = threadIdx.x + kCached * step; !kAdd && i0 < n; i0 += step) {
      const double v = load_plain(x.type, rx + i0 * x.nb[0]);
      put(i0, v, kMul ? load_plain(w.type, rw + (i0 % w.ne[0]) * w.nb[0]) : 0.0f);
    }
  }
}

// Short rows (up to 256 elements: attention heads, GDN heads), one warp per row and 8 rows per
// block: every element is loaded up front and the sum needs only the warp's xor tree, no barrier.
constexpr int kRowLanes = 32;
static_assert(kRowLanes == mm::kWarp, "warp_sum_squares: a row is one full warp");
constexpr int kRowElems = 8;  // per lane: rows up to 256
constexpr int kRowsPerBlock = 8;

// The rotation after the weight (norm_mul_rope: the attention's q and k heads): NEOX pairs (k, k +
// half) of the first n_dims = 64 kHalf elements at the row's token position, with rope_kernel's
// double arithmetic. Lane l holds elements l + 32 e, so a pair is elements e and e + kHalf of one lane.
struct RopeFusion {
  const int32_t* pos = nullptr;  // one position per token (the rows' dim 2)
  float* out = nullptr;          // the ROPE node's result: dense F32, m's shape
  double freq_base = 0.0, freq_scale = 0.0;
  int32_t n_dims = 0;
};

template <int kHalf>
__device__ __forceinline__ void rope_row(const RopeFusion& f, int64_t token, int64_t row, int64_t n, int lane,
                                         const float (&mv)[kRowElems]) {
  const double pt = __dmul_rn(static_cast<double>(f.pos[token]), f.freq_scale);
  float* out = f.out + row * n;
#pragma unroll
  for (int e = 0; e < kRowElems; ++e) {
    const int64_t i0 = lane + kRowLanes * e;
    if (i0 >= n) continue;
    if (e >= 2 * kHalf) {  // past n_dims: copied
      out[i0] = mv[e];
    } else if (e < kHalf) {
      const double inv_freq = pow(f.freq_base, -2.0 * static_cast<double>(i0) / static_cast<double>(f.n_dims));
      double sn, cs;
      sincos(__dmul_rn(pt, inv_freq), &sn, &cs);
      const double x0 = mv[e], x1 = mv[e + kHalf];
      out[i0] = static_cast<float>(__dsub_rn(__dmul_rn(x0, cs), __dmul_rn(x1, sn)));
      out[i0 + kRowLanes * kHalf] = static_cast<float>(__dadd_rn(__dmul_rn(x1, cs), __dmul_rn(x0, sn)));
    }
  }
}

template <bool kMul, int kHalf = 0>
__global__ void __launch_bounds__(kRowLanes* kRowsPerBlock)
    short_norm_kernel(TensorArg x, TensorArg y, int64_t rows, bool rms, double eps, TensorArg w, TensorArg m,
                      bool w_row, RopeFusion rope = {}) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  const int lane = threadIdx.x % kRowLanes;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kRowLanes;
  if (r >= rows) return;
  const int64_t n = y.ne[0];
  int64_t i1, i2, i3;
  unravel_row(y.ne, r, i1, i2, i3);
  const char* rx = row_ptr(x, i1, i2, i3);
  // w_row: one weight row of n elements for every row (the model's norms), indexed without the
  // 64-bit modulos of the general broadcast (ncu had this kernel at 10.5 us a call, 3.9 without w).
  const char* rw = !kMul ? nullptr : w_row ? w.data : row_ptr(w, i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]);
  float xv[kRowElems], wv[kRowElems];
#pragma unroll
  for (int e = 0; e < kRowElems; ++e) {
    const int64_t i0 = lane + kRowLanes * e;
    xv[e] = i0 < n ? load_plain(x.type, rx + i0 * x.nb[0]) : 0.0f;
    wv[e] = kMul && i0 < n ? load_plain(w.type, rw + (w_row ? i0 : i0 % w.ne[0]) * w.nb[0]) : 0.0f;
  }
  const double ss = warp_sum_squares(xv);
  const double inv = 1.0 / sqrt((rms ? ss / static_cast<double>(n) : ss) + eps);
  char* ry = row_ptr(y, i1, i2, i3);
  char* rm = kMul ? row_ptr(m, i1, i2, i3) : nullptr;
  float mv[kRowElems];
#pragma unroll
  for (int e = 0; e < kRowElems; ++e) {
    const int64_t i0 = lane + kRowLanes * e;
    mv[e] = 0.0f;
    if (i0 >= n) continue;
    const float yv = static_cast<float>(static_cast<double>(xv[e]) * inv);
    store_plain(y.type, ry + i0 * y.nb[0], yv);
    mv[e] = round_to(y.type, yv) * wv[e];
    if constexpr (kMul) store_plain(m.type, rm + i0 * m.nb[0], mv[e]);
  }
  if constexpr (kHalf > 0) rope_row<kHalf>(rope, i2, r, n, lane, mv);
}

// Rows short enough for short_norm_kernel: launched, true; else false (kHalf > 0: with the rope).
template <bool kMul, int kHalf = 0>
bool launch_short(const Ctx& ctx, const Tensor& x, const Tensor& y, const Tensor* w, const Tensor* m,
                  const RopeFusion& rope = {}) {
  if (y.ne[0] > int64_t{kRowLanes} * kRowElems) return false;
  const int64_t rows = nrows(y);
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, kMaxBlocks));
  if (rows == 0) return true;
  const bool w_row = w && w->ne[0] == y.ne[0] && w->ne[1] == 1 && w->ne[2] == 1 && w->ne[3] == 1;
  short_norm_kernel<kMul, kHalf><<<blocks, kRowLanes * kRowsPerBlock, 0, ctx.stream>>>(
      arg(x), arg(y), rows, y.op == Op::RMS_NORM, static_cast<double>(y.p<NormParams>().eps), w ? arg(*w) : TensorArg{},
      m ? arg(*m) : TensorArg{}, w_row, rope);
  return true;
}

// Rows of contiguous F32 (the model's hidden states: one or a few rows of 4096): one block per
// row, float4 loads issued together up front, so a lone row costs one memory round trip and a
// handful of instructions per element instead of the strided kernel's per-element index math.
// Same arithmetic as norm_kernel: float add and multiply, double squares, sum and scale.
constexpr int kWideChunks = 4;  // float4 chunks per thread: rows up to 4 x 4 x kNormThreads

struct WideRows {
  const float* x;
  const float* b;  // kAdd: x + b is the row, stored to sum
  float* sum;
  float* y;
  const float* w;  // kMul: m = y * w (one weight row for all rows)
  float* m;
  int64_t ne0, rows;
  char* q8 = nullptr;  // kMul: m's rows also as int8 blocks of 32 (matmul_gemv_q8.cu's layout)
  int64_t q8_stride = 0;
};

// m's float4 chunks of one row (thread t: chunk t + c blockDim.x) quantized as quantize_rows_q8
// does it, bit for bit: a 32-element block is 8 adjacent threads' chunks, d = max|m| / 127 and
// q = round(m / d). Every thread of the block calls it (the max takes shuffles).
__device__ void store_q8_row(const float4 (&mv)[kWideChunks], int64_t n4, char* row, int64_t ne0) {
#pragma unroll
  for (int c = 0; c < kWideChunks; ++c) {
    const int64_t i = threadIdx.x + int64_t{c} * blockDim.x;
    const float4 v = mv[c];
    float amax = i < n4 ? fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))) : 0.0f;
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, off));
    if (i >= n4) continue;
    const float d = __fdiv_rn(amax, 127.0f);
    auto q = [&](float e) {
      const int r = amax > 0.0f ? __float2int_rn(__fdiv_rn(e, d)) : 0;
      return static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(max(-127, min(127, r)))));
    };
    reinterpret_cast<uint32_t*>(row)[i] = q(v.x) | (q(v.y) << 8) | (q(v.z) << 16) | (q(v.w) << 24);
    if (i % 8 == 0) reinterpret_cast<float*>(row + ne0)[i / 8] = d;
  }
}

template <bool kAdd, bool kMul>
__global__ void __launch_bounds__(kNormThreads) wide_norm_kernel(WideRows a, bool rms, double eps) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  __shared__ double scratch[32];
  const int64_t n4 = a.ne0 / 4;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t off = r * n4;
    float4 xv[kWideChunks], bv[kWideChunks], wv[kWideChunks];
#pragma unroll
    for (int c = 0; c < kWideChunks; ++c) {
      const int64_t i = threadIdx.x + int64_t{c} * blockDim.x;
      const bool in = i < n4;
      xv[c] = in ? reinterpret_cast<const float4*>(a.x)[off + i] : float4{};
      if constexpr (kAdd) bv[c] = in ? reinterpret_cast<const float4*>(a.b)[off + i] : float4{};
      if constexpr (kMul) wv[c] = in ? reinterpret_cast<const float4*>(a.w)[i] : float4{};
    }
    double ss = 0.0;
#pragma unroll
    for (int c = 0; c < kWideChunks; ++c) {
      const int64_t i = threadIdx.x + int64_t{c} * blockDim.x;
      if constexpr (kAdd) {
        xv[c] = float4{xv[c].x + bv[c].x, xv[c].y + bv[c].y, xv[c].z + bv[c].z, xv[c].w + bv[c].w};
        if (i < n4) reinterpret_cast<float4*>(a.sum)[off + i] = xv[c];
      }
      const double e0 = xv[c].x, e1 = xv[c].y, e2 = xv[c].z, e3 = xv[c].w;
      ss += e0 * e0;
      ss += e1 * e1;
      ss += e2 * e2;
      ss += e3 * e3;
    }
    ss = group_reduce(ss, SumOp{}, scratch);
    const double inv = 1.0 / sqrt((rms ? ss / static_cast<double>(a.ne0) : ss) + eps);
    float4 mv[kWideChunks];
#pragma unroll
    for (int c = 0; c < kWideChunks; ++c) {
      const int64_t i = threadIdx.x + int64_t{c} * blockDim.x;
      mv[c] = float4{};
      if (i >= n4) continue;
      const float4 yv{static_cast<float>(xv[c].x * inv), static_cast<float>(xv[c].y * inv),
                      static_cast<float>(xv[c].z * inv), static_cast<float>(xv[c].w * inv)};
      reinterpret_cast<float4*>(a.y)[off + i] = yv;
      if constexpr (kMul) {
        mv[c] = float4{yv.x * wv[c].x, yv.y * wv[c].y, yv.z * wv[c].z, yv.w * wv[c].w};
        reinterpret_cast<float4*>(a.m)[off + i] = mv[c];
      }
    }
    if (kMul && a.q8) store_q8_row(mv, n4, a.q8 + r * a.q8_stride, a.ne0);
  }
}

// The wide kernel's conditions: every tensor dense F32 and 16-byte aligned, rows a multiple of 4
// wide and at most kWideChunks float4 per thread, and (kMul) one weight row.
bool wide_rows(const Tensor& x, const Tensor* b, const Tensor& y, const Tensor* w) {
  const int64_t ne0 = y.ne[0];
  if (ne0 % 4 != 0 || ne0 / 4 > int64_t{kWideChunks} * kNormThreads || ne0 < 1024) return false;
  if (!dense_f32(x) || !dense_f32(y) || (b && !dense_f32(*b))) return false;
  return !w || (dense_f32(*w) && w->ne[0] == ne0 && nelements(*w) == ne0);
}

template <bool kAdd, bool kMul>
void launch_wide(const Ctx& ctx, const WideRows& a, bool rms, double eps) {
  const int64_t n4 = a.ne0 / 4;
  int threads = 128;
  while (threads < kNormThreads && threads * kWideChunks < n4) threads *= 2;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.rows, kMaxBlocks));
  wide_norm_kernel<kAdd, kMul><<<blocks, threads, 0, ctx.stream>>>(a, rms, eps);
}

}  // namespace

void norm(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::RMS_NORM || dst.op == Op::L2_NORM, "cuda norm: not an RMS_NORM/L2_NORM node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(same_shape(a, dst), "cuda norm: dst must match src");
  if (launch_short<false>(ctx, a, dst, nullptr, nullptr)) return;
  const RowLaunch l = row_launch(dst.ne[0], nrows(dst), kNormThreads);
  if (l.empty()) return;
  norm_kernel<false, false><<<l.grid, l.block, 0, ctx.stream>>>(
      arg(a), arg(dst), l.rows, dst.op == Op::RMS_NORM, static_cast<double>(dst.p<NormParams>().eps), NormFusion{});
}

namespace {

bool is_norm(const Tensor& t) { return t.op == Op::RMS_NORM || t.op == Op::L2_NORM; }

// mul = norm * w, w broadcast onto norm's shape, plain dtypes, nothing overwritten early.
bool weight_mul_fusable(const Tensor& nrm, const Tensor& mul) {
  if (mul.op != Op::MUL || mul.src[0] != &nrm || mul.src[1] == &nrm) return false;
  const Tensor& w = *mul.src[1];
  if (!same_shape(nrm, mul) || !is_plain_type(w.type) || !is_plain_type(mul.type)) return false;
  if (!safe_to_fuse(mul, *nrm.src[0]) || !safe_to_fuse(mul, w)) return false;
  for (int d = 0; d < kMaxDims; ++d)
    if (w.ne[d] <= 0 || mul.ne[d] % w.ne[d] != 0) return false;
  return true;
}

// Points a (the wide kernel's rows, which read and write `touched`) at next's int8 workspace when
// q8_input_target gives one that none of them overlaps; true when it did.
bool add_q8_output(const Ctx& ctx, WideRows& a, const Tensor& mul, const Tensor* next,
                   std::initializer_list<const Tensor*> touched) {
  char* q = q8_input_target(ctx, mul, next);
  if (!q || a.ne0 % 32 != 0) return false;
  const size_t n = q8_rows_bytes(mul);
  for (const Tensor* t : touched)
    if (bytes_overlap(q, n, t->data, nbytes(*t))) return false;
  a.q8 = q;
  a.q8_stride = mm::q8_row_stride(a.ne0);
  return true;
}

}  // namespace

bool norm_mul(const Ctx& ctx, Tensor& nrm, Tensor& mul) { return norm_mul(ctx, nrm, mul, nullptr); }

bool norm_add_mul(const Ctx& ctx, Tensor& add, Tensor& nrm, Tensor& mul) {
  return norm_add_mul(ctx, add, nrm, mul, nullptr);
}

bool norm_mul(const Ctx& ctx, Tensor& nrm, Tensor& mul, const Tensor* next) {
  if (!is_norm(nrm) || !weight_mul_fusable(nrm, mul)) return false;
  const bool rms = nrm.op == Op::RMS_NORM;
  const double eps = static_cast<double>(nrm.p<NormParams>().eps);
  if (nelements(nrm) == 0) return true;
  if (wide_rows(*nrm.src[0], nullptr, nrm, mul.src[1]) && dense_f32(mul)) {
    const Tensor& x = *nrm.src[0];
    WideRows a{static_cast<const float*>(x.data),
               nullptr,
               nullptr,
               static_cast<float*>(nrm.data),
               static_cast<const float*>(mul.src[1]->data),
               static_cast<float*>(mul.data),
               nrm.ne[0],
               nrows(nrm)};
    const bool q8 = add_q8_output(ctx, a, mul, next, {&x, &nrm, &mul, mul.src[1]});
    launch_wide<false, true>(ctx, a, rms, eps);
    if (q8) *ctx.q8 = {a.q8, &mul, mul.data};
    return true;
  }
  if (launch_short<true>(ctx, *nrm.src[0], nrm, mul.src[1], &mul)) return true;
  const RowLaunch l = row_launch(nrm.ne[0], nrows(nrm), kNormThreads);
  if (l.empty()) return true;
  NormFusion f;
  f.w = arg(*mul.src[1]);
  f.m = arg(mul);
  norm_kernel<false, true><<<l.grid, l.block, 0, ctx.stream>>>(
      arg(*nrm.src[0]), arg(nrm), l.rows, nrm.op == Op::RMS_NORM, static_cast<double>(nrm.p<NormParams>().eps), f);
  return true;
}

// The residual add of a layer and the norm x weight after it: rows that fit the register cache, an
// F32 add without broadcast, and no output overlapping what the kernel still reads.
bool norm_add_mul(const Ctx& ctx, Tensor& add, Tensor& nrm, Tensor& mul, const Tensor* next) {
  if (add.op != Op::ADD || !is_norm(nrm) || nrm.src[0] != &add || !weight_mul_fusable(nrm, mul)) return false;
  const Tensor& a = *add.src[0];
  const Tensor& b = *add.src[1];
  if (add.type != DType::F32 || a.type != DType::F32 || b.type != DType::F32) return false;
  if (!same_shape(a, add) || !same_shape(b, add) || add.ne[0] > int64_t{kCached} * kNormThreads) return false;
  const Tensor* outs[] = {&add, &nrm, &mul};
  const Tensor* ins[] = {&a, &b, mul.src[1]};
  for (const Tensor* out : outs)
    for (const Tensor* in : ins)
      if (!safe_to_fuse(*out, *in)) return false;
  if (!safe_to_fuse(nrm, add) || !safe_to_fuse(mul, add) || !safe_to_fuse(mul, nrm)) return false;
  if (mul.src[1]->data == add.data) return false;  // the weight is loaded before the sum is stored
  const bool rms = nrm.op == Op::RMS_NORM;
  const double eps = static_cast<double>(nrm.p<NormParams>().eps);
  if (nelements(nrm) == 0) return true;
  if (wide_rows(a, &b, nrm, mul.src[1]) && dense_f32(add) && dense_f32(mul)) {
    WideRows w{static_cast<const float*>(a.data),
               static_cast<const float*>(b.data),
               static_cast<float*>(add.data),
               static_cast<float*>(nrm.data),
               static_cast<const float*>(mul.src[1]->data),
               static_cast<float*>(mul.data),
               nrm.ne[0],
               nrows(nrm)};
    const bool q8 = add_q8_output(ctx, w, mul, next, {&a, &b, &add, &nrm, &mul, mul.src[1]});
    launch_wide<true, true>(ctx, w, rms, eps);
    if (q8) *ctx.q8 = {w.q8, &mul, mul.data};
    return true;
  }
  const RowLaunch l = row_launch(nrm.ne[0], nrows(nrm), kNormThreads);
  if (l.empty()) return true;
  NormFusion f{arg(b), arg(add), arg(*mul.src[1]), arg(mul)};
  norm_kernel<true, true><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(nrm), l.rows, nrm.op == Op::RMS_NORM,
                                                              static_cast<double>(nrm.p<NormParams>().eps), f);
  return true;
}

namespace {

// The ROPE after a fused norm x weight that short_norm_kernel can do too: NEOX over a multiple of 64
// leading elements of rows of at most 256, one I32 position per token, dense F32 results, nothing
// it writes lying on what it reads but the same elements.
bool rope_fusable(const Tensor& nrm, const Tensor& mul, const Tensor& rope) {
  if (rope.op != Op::ROPE || rope.src[0] != &mul) return false;
  const RopeParams& p = rope.p<RopeParams>();
  const Tensor& pos = *rope.src[1];
  const int64_t n = mul.ne[0];
  if (p.mode != RopeMode::NEOX || p.n_dims % 64 != 0 || p.n_dims < 64 || p.n_dims > n ||
      n > int64_t{kRowLanes} * kRowElems)
    return false;
  if (pos.type != DType::I32 || !is_contiguous(pos) || nelements(pos) != mul.ne[2] || mul.ne[3] != 1) return false;
  if (nrm.type != DType::F32 || !dense_f32(mul) || !dense_f32(rope) || !same_shape(rope, mul)) return false;
  const Tensor& w = *mul.src[1];
  return safe_to_fuse(rope, *nrm.src[0]) && safe_to_fuse(rope, nrm) && safe_to_fuse(rope, mul) && disjoint(rope, w) &&
         disjoint(rope, pos);
}

}  // namespace

bool norm_mul_rope(const Ctx& ctx, Tensor& nrm, Tensor& mul, Tensor& rope) {
  if (!is_norm(nrm) || !weight_mul_fusable(nrm, mul) || !rope_fusable(nrm, mul, rope)) return false;
  const RopeParams& p = rope.p<RopeParams>();
  const RopeFusion f{static_cast<const int32_t*>(rope.src[1]->data), static_cast<float*>(rope.data),
                     static_cast<double>(p.freq_base), static_cast<double>(p.freq_scale), p.n_dims};
  const Tensor& x = *nrm.src[0];
  const Tensor& w = *mul.src[1];
  switch (p.n_dims / 64) {
    case 1: return launch_short<true, 1>(ctx, x, nrm, &w, &mul, f);
    case 2: return launch_short<true, 2>(ctx, x, nrm, &w, &mul, f);
    case 4: return launch_short<true, 4>(ctx, x, nrm, &w, &mul, f);
    default: return false;  // other widths (192) are not instantiated: left to the two kernels
  }
}

}  // namespace gl::cuda
