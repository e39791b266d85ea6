// matmul_gemv_q8.cu - the GEMV of gemv_kernel.cuh against int8 activations, for Q8_0 and the
// K-quant weights under Precision::FAST (as llama.cpp's CUDA backend multiplies its quantized types).
//
//   quantize_rows_q8(ctx, x, ws);                       // every activation row on its own
//   launch_q8(ctx, w.type, rows_per_group, wd, rows, epi);  // rows address ws
//
// Why: the F32 activations are read through L1 at 4 bytes per element against ~0.6 bytes of
// weights (K-quants; ~1.06 for Q8_0), and their float FMAs take more registers than the quants;
// int8 quants and dp4a cut both. Each activation block of 32 is quantized to d = max|x| / 127, q = round(x / d),
// so an element is off by at most d / 2 (the op harness's kNmseQ8Out bound), the weights stay
// exact and the integer sums of a run are exact. A row is quantized from its own values only and
// reduced in the float path's fixed order, so results stay batch invariant (MTP parity).
#include "gemv_launch.cuh"
#include "ggml-lite/status.h"

namespace gl::cuda::mm {

bool q8_gemv_type(DType w) { return w == DType::Q8_0 || w == DType::Q4_K || w == DType::Q5_K || w == DType::Q6_K; }

int64_t q8_row_stride(int64_t k) { return ceil_div<int64_t>(k + k / 32 * 4, 16) * 16; }

size_t q8_act_bytes(DType w, const Tensor& x) {
  if (!q8_gemv_type(w)) return 0;
  return static_cast<size_t>(q8_row_stride(x.ne[0]) * x.ne[1] * x.ne[2] * x.ne[3]);
}

namespace {

constexpr int kQ8Threads = 256;

// One warp per 32-element block b of the rows (i1 fastest, then i2, i3), lane l its element l.
__global__ void __launch_bounds__(kQ8Threads) quantize_q8_kernel(TView x, char* dst, int64_t stride, int64_t n_blocks) {
  pdl_trigger();
  pdl_wait();
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t b = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (b >= n_blocks) return;
  const int64_t per_row = x.ne[0] / 32, row = b / per_row, j = b % per_row;
  const int64_t i1 = row % x.ne[1], i2 = (row / x.ne[1]) % x.ne[2], i3 = row / (x.ne[1] * x.ne[2]);
  const float v = load_scalar(x.type, x.data + (32 * j + lane) * x.nb[0] + i1 * x.nb[1] + i2 * x.nb[2] + i3 * x.nb[3]);
  warp_quantize_q8(v, dst + row * stride, x.ne[0], j, lane);
}

template <int M, class Rows, class Epi>
void launch_m(const Ctx& ctx, DType wt, const WDesc& w, const Rows& rows, const Epi& epi) {
  const Q8Act x{};
  switch (wt) {
    case DType::Q8_0: return launch<DType::Q8_0, M>(ctx, w, x, rows, epi);
    case DType::Q4_K: return launch<DType::Q4_K, M>(ctx, w, x, rows, epi);
    case DType::Q5_K: return launch<DType::Q5_K, M>(ctx, w, x, rows, epi);
    case DType::Q6_K: return launch<DType::Q6_K, M>(ctx, w, x, rows, epi);
    default: fail(__FILE__, __LINE__, "gemv_q8", "weight type without an int8 GEMV");
  }
}

}  // namespace

void quantize_rows_q8(const Ctx& ctx, const Tensor& x, char* dst) {
  GL_ASSERT(x.ne[0] % 32 == 0, "gemv_q8: rows of whole 32-element blocks");
  const int64_t n_blocks = x.ne[0] / 32 * x.ne[1] * x.ne[2] * x.ne[3];
  if (n_blocks == 0) return;
  const int64_t per_block = kQ8Threads / kWarp;
  launch_pdl(quantize_q8_kernel, dim3(static_cast<unsigned>(ceil_div(n_blocks, per_block))), dim3(kQ8Threads),
             ctx.stream, view_of(x), dst, q8_row_stride(x.ne[0]), n_blocks);
  GL_CUDA_CHECK(cudaGetLastError());
}

template <class Rows, class Epi>
void launch_q8(const Ctx& ctx, DType wt, int m, const WDesc& w, const Rows& rows, const Epi& epi) {
  switch (m) {
    case 1: return launch_m<1>(ctx, wt, w, rows, epi);
    case 2: return launch_m<2>(ctx, wt, w, rows, epi);
    case 4: return launch_m<4>(ctx, wt, w, rows, epi);
    default: return launch_m<kGemvMaxRows>(ctx, wt, w, rows, epi);
  }
}

template void launch_q8<MulMatRows, NoEpilogue>(const Ctx&, DType, int, const WDesc&, const MulMatRows&,
                                                const NoEpilogue&);
template void launch_q8<MulMatRows, Chain>(const Ctx&, DType, int, const WDesc&, const MulMatRows&, const Chain&);
template void launch_q8<TwinRows, TwinChain>(const Ctx&, DType, int, const WDesc&, const TwinRows&, const TwinChain&);
template void launch_q8<IdRows, NoEpilogue>(const Ctx&, DType, int, const WDesc&, const IdRows&, const NoEpilogue&);
template void launch_q8<PairRows<MulMatRows>, NoEpilogue>(const Ctx&, DType, int, const WDesc&,
                                                          const PairRows<MulMatRows>&, const NoEpilogue&);
template void launch_q8<PairRows<IdRows>, NoEpilogue>(const Ctx&, DType, int, const WDesc&, const PairRows<IdRows>&,
                                                      const NoEpilogue&);

}  // namespace gl::cuda::mm
