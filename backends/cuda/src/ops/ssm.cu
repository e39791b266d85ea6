// ssm.cu - SSM_CONV on CUDA, and which Gated DeltaNet nodes the CUDA kernels take (supports_ssm).
//
// Why this shape: the causal depthwise conv is Kc (4) multiply-adds per output and pure bandwidth,
// so one thread per output (c, t), channels fastest for coalesced reads of xs columns. xs is read
// through its strides (it is usually a concat or a view of the conv window).
// out[c, t] = sum_j w[j, c] * xs[c, t + j], summed in tap order j = 0 .. Kc-1 like the CPU kernel.
// Fused with its neighbours (the GDN input path concat(state, new) -> ssm_conv -> silu), one kernel
// reads the two halves of the window directly and writes all three results.
#include <algorithm>

#include "chain.cuh"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

using mm::TView;

constexpr int kConvThreads = 256;

__global__ void ssm_conv_kernel(TView xs, TView w, float* out, int64_t channels, int64_t n_t) {
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

}  // namespace

bool conv_window(const Ctx& ctx, Tensor& cat, Tensor& conv, Tensor& act) {
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
  const int64_t channels = conv.ne[0], n_t = conv.ne[1], n = channels * n_t;
  for (const Tensor* out : outs)
    for (const Tensor* in : ins) {
      const bool own_column = n_t == 1 && in == &b && out != &cat && safe_to_fuse(*out, b);
      if (!disjoint(*out, *in) && !own_column) return false;
    }
  if (!disjoint(cat, conv) || !disjoint(cat, act) || !safe_to_fuse(act, conv)) return false;
  if (n == 0) return true;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(mm::ceil_div<int64_t>(n, kConvThreads), 65535));
  conv_window_kernel<<<blocks, kConvThreads, 0, ctx.stream>>>(
      ConvWindow{arg(a), arg(b), arg(w), arg(cat), arg(conv), arg(act)}, channels, n_t);
  return true;
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
