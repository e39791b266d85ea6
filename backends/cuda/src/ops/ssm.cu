// ssm.cu - SSM_CONV on CUDA, and which Gated DeltaNet nodes the CUDA kernels take (supports_ssm).
//
// Why this shape: the causal depthwise conv is Kc (4) multiply-adds per output and pure bandwidth,
// so one thread per output (c, t), channels fastest for coalesced reads of xs columns. xs is read
// through its strides (it is usually a concat or a view of the conv window).
// out[c, t] = sum_j w[j, c] * xs[c, t + j], summed in tap order j = 0 .. Kc-1 like the CPU kernel.
#include <algorithm>

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

}  // namespace

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
