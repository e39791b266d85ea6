// matmul_q8_mma.cu - MUL_MAT prefill with Q8_0 weights on tensor cores, without a float round trip.
//
// Why: cuBLAS needs the weights in F16, and d * q (an F16 scale times an 8-bit quant) takes up to
// 19 significant bits, so the cuBLAS path wrote every weight tile as two F16 halves and ran three
// GEMMs (w_hi x_hi, w_hi x_lo, w_lo x_hi). Here the quants themselves are the operand: an integer
// of at most 8 bits is exact in F16. For each 32-element block the tensor cores form
// sum(x * q) in F32 from the activations' F16 high half and (under Precision::EXACT) their
// residue, and the block's d scales that partial sum as it joins the accumulator: two products
// per element instead of three, and no dequantized tile written or read.
//
// A block computes a kBM-row x kBN-weight-row output tile over K in steps of kBK = two Q8_0
// blocks, kStages step buffers through cp.async: the activations (pre-rounded F16 rows) and the
// 16-byte pieces that hold each weight row's two blocks (68 bytes), as read. After a step lands,
// each thread turns one block of one row into F16 levels and its float d in shared memory; the
// warps then run mma.sync m16n8k16 on ldmatrix fragments. matmul.cu sends it EXACT products whose
// tiles fill the device (q8_mma_fills): tried on a 9B and a 35B-A3B (bench/s19.md).
#include <algorithm>

#include "kernels.cuh"
#include "mm_utils.cuh"
#include "mma_sync.cuh"

namespace gl::cuda::mm {
namespace {

using Q = QuantTraits<DType::Q8_0>;

constexpr int kBM = 128;       // activation rows per output tile
constexpr int kBN = 128;       // weight rows per output tile
constexpr int kBK = 64;        // K per step: two Q8_0 blocks
constexpr int kStages = 4;     // step buffers: two in flight while one is decoded and one multiplied
constexpr int kThreads = 256;  // 8 warps: 4 along the rows x 2 along the weight rows
constexpr int kWM = 32;        // a warp's activation rows (two 16-row fragments)
constexpr int kWN = 64;        // and weight rows (eight 8-row fragments)
constexpr int kFM = kWM / 16, kFN = kWN / 8;
constexpr int kLd = kBK + 8;  // padded F16 row: ldmatrix's 8 rows fall in distinct banks
constexpr int kBlocksPerStep = kBK / Q::kBlock;
constexpr int kStepBytes = kBlocksPerStep * Q::kBlockBytes;  // 68: a row's two blocks
// A step's 68 bytes start 0, 4, 8 or 12 bytes into a 16-byte piece (rows of K % 256 == 0 start on
// 16 bytes), so five pieces cover them; the last step's five end at the row's end.
constexpr int kRawPieces = 5;
constexpr int kRawWords = kRawPieces * 4;
constexpr int kPieces = kBK / 8;  // 16-byte pieces of a staged row
static_assert(kBlocksPerStep == 2 && kStepBytes % 4 == 0 && 12 + kStepBytes <= 16 * kRawPieces,
              "a step is two blocks, whole words, within five pieces");
static_assert(kBN * kBlocksPerStep == kThreads, "a thread decodes one block of one row");
static_assert(kBM / kWM * (kBN / kWN) * kWarp == kThreads, "the warps tile the block");

struct Args {
  const char* w;  // Q8_0 rows [K, N] at w_nb1 bytes
  int64_t w_nb1, k, n, m;
  const __half* xh;  // activations [K, M] rounded to F16, dense rows; their residue at xl
  const __half* xl;
  float* dst;    // [N, M]
  bool split_x;  // EXACT: the activations' residue as a second operand
};

struct Stage {
  __half a[2][kBM * kLd];         // activations: high half, residue
  uint32_t raw[kBN * kRawWords];  // the pieces holding the weight rows' two blocks, as read
};

struct Smem {
  Stage st[kStages];
  __half b[2][kBN * kLd];                       // levels (quants as F16) of the step being multiplied and the next
  alignas(16) float d[2][kBlocksPerStep][kBN];  // and their scales
};

constexpr size_t kSmemBytes = sizeof(Smem);
static_assert(kSmemBytes <= 227 * 1024, "an sm_90 block's shared memory");

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Issues the copies of step s (K from s * kBK) into its stage buffer; rows past M or N read
// nothing and land as zeros (a zero block's d is 0, so those outputs are 0 and never stored).
// Adjacent threads copy adjacent pieces (activations) and words (weights), so that a warp's copy
// reads a few whole rows, not a piece of each of 16.
__device__ void load_step(const Args& p, Stage& st, int64_t m0, int64_t n0, int64_t s) {
  constexpr int kAPieces = kBM * kPieces / kThreads, kRowsApart = kThreads / kPieces;
  static_assert(kAPieces * kThreads == kBM * kPieces, "whole 16-byte pieces a thread");
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t k0 = s * kBK;
  const int ar = tid / kPieces, ac = tid % kPieces;
  // Offsets within the tile's rows fit 32 bits (kBM or kBN rows of K < 2^24 elements).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (h == 1 && !p.split_x) break;
    const __half* x = (h == 0 ? p.xh : p.xl) + m0 * p.k + k0 + 8 * ac;
#pragma unroll
    for (int c = 0; c < kAPieces; ++c) {
      const int r = ar + c * kRowsApart;
      const bool live = m0 + r < p.m;
      cp_async16(st.a[h] + r * kLd + 8 * ac, x + (live ? static_cast<uint32_t>(r) * static_cast<uint32_t>(p.k) : 0u),
                 live ? 16 : 0);
    }
  }
  constexpr int kAll = kBN * kRawPieces;
  const char* w = p.w + n0 * p.w_nb1 + (s * kStepBytes & ~int64_t{15});
#pragma unroll
  for (int i = 0; i < (kAll + kThreads - 1) / kThreads; ++i) {
    const int q = tid + i * kThreads;
    if (q >= kAll) break;
    const int r = q / kRawPieces, c = q % kRawPieces;
    const bool live = n0 + r < p.n;
    const uint32_t at = static_cast<uint32_t>(r) * static_cast<uint32_t>(p.w_nb1) + 16u * static_cast<uint32_t>(c);
    cp_async16(st.raw + 4 * q, w + (live ? at : 0u), live ? 16 : 0);
  }
}

__device__ __forceinline__ uint32_t biased_pair(uint32_t u, uint32_t selector) {
  const __half2 bias = __half2half2(__ushort_as_half(0x6480));  // 1152
  const uint32_t b = __byte_perm(u, 0x64646464u, selector);
  const __half2 v = __hsub2(*reinterpret_cast<const __half2*>(&b), bias);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ void levels4(uint32_t w, uint32_t& lo, uint32_t& hi) {
  const uint32_t u = w ^ 0x80808080u;
  lo = biased_pair(u, 0x5140);
  hi = biased_pair(u, 0x5342);
}

// Thread t decodes block t % 2 of weight row t / 2 of landed step s into levels and d. The row's
// staged words hold block 0 at byte o = 68 s % 16 and block 1 at o + 34: reading nine words from
// word o / 4 + 8 h puts the block's d at byte 2h and its quants from byte 2h + 2.
__device__ void decode_step(const Stage& st, int64_t s, __half* b, float (&dq)[kBlocksPerStep][kBN]) {
  const int r = static_cast<int>(threadIdx.x) / 2, h = static_cast<int>(threadIdx.x) % 2;
  const uint32_t* w = st.raw + r * kRawWords + static_cast<int>(s * kStepBytes % 16) / 4 + 8 * h;
  uint32_t v[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) v[i] = w[i];
  dq[h][r] = __half2float(__ushort_as_half(static_cast<uint16_t>(h ? v[0] >> 16 : v[0] & 0xffffu)));
  uint32_t out[16];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint32_t q = h ? v[i + 1] : __funnelshift_r(v[i], v[i + 1], 16);
    levels4(q, out[2 * i], out[2 * i + 1]);
  }
  uint4* dst = reinterpret_cast<uint4*>(b + r * kLd + Q::kBlock * h);
#pragma unroll
  for (int i = 0; i < 4; ++i) dst[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
}

// The warp's kWM x kWN share of the tile over one landed step: per block and 16-row fragment, the
// levels times the activations (high half, then residue) into fresh F32 sums, one per 8 weight
// rows, which the block's d scales into acc. Consecutive products go to different sums, so none
// waits for the one before (a chain of dependent products stalled the warps).
__device__ void mma_step(const Args& p, const Stage& st, const __half* bl, const float (&dq)[kBlocksPerStep][kBN],
                         int wm, int wn, float (&acc)[kFM][kFN][4]) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
#pragma unroll 1  // one block's level fragments live at a time
  for (int blk = 0; blk < kBlocksPerStep; ++blk) {
    uint32_t b[kFN][4];  // per 8 weight rows: k 0-7, 8-15 (the first k16), 16-23, 24-31 (the second)
#pragma unroll
    for (int j = 0; j < kFN; ++j)
      ldsm_x4(b[j], bl + (wn * kWN + j * 8 + lane % 8) * kLd + blk * Q::kBlock + 8 * (lane / 8));
#pragma unroll
    for (int i = 0; i < kFM; ++i) {
      uint32_t a[2][2][4];  // [half][k16]
      const int row = wm * kWM + i * 16 + lane % 8 + 8 * ((lane / 8) % 2);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h == 1 && !p.split_x) break;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
          ldsm_x4(a[h][ks], st.a[h] + row * kLd + blk * Q::kBlock + ks * 16 + 8 * (lane / 16));
      }
      float t[kFN][4] = {};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (h == 1 && !p.split_x) break;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
#pragma unroll
          for (int j = 0; j < kFN; ++j) mma_f16(t[j], a[h][ks], b[j][2 * ks], b[j][2 * ks + 1]);
      }
#pragma unroll
      for (int j = 0; j < kFN; ++j) {
        const float2 d = *reinterpret_cast<const float2*>(&dq[blk][wn * kWN + j * 8 + 2 * (lane % 4)]);
        acc[i][j][0] += d.x * t[j][0];
        acc[i][j][1] += d.y * t[j][1];
        acc[i][j][2] += d.x * t[j][2];
        acc[i][j][3] += d.y * t[j][3];
      }
    }
  }
}

__device__ void store_tile(const Args& p, int64_t m0, int64_t n0, int wm, int wn, const float (&acc)[kFM][kFN][4]) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < kFM; ++i)
#pragma unroll
    for (int j = 0; j < kFN; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t m = m0 + wm * kWM + i * 16 + g + 8 * half, n = n0 + wn * kWN + j * 8 + 2 * t;
        if (m >= p.m) continue;
        float* out = p.dst + m * p.n + n;
        if (n + 1 < p.n && p.n % 2 == 0) {  // 8-byte aligned pair
          *reinterpret_cast<float2*>(out) = make_float2(acc[i][j][2 * half], acc[i][j][2 * half + 1]);
        } else {
          if (n < p.n) out[0] = acc[i][j][2 * half];
          if (n + 1 < p.n) out[1] = acc[i][j][2 * half + 1];
        }
      }
}

// Block (x, y): activation rows [kBM x, + kBM) times weight rows [kBN y, + kBN). The blocks of
// one weight tile run side by side, so each weight row is read from memory about once. Step s's
// levels are decoded while the warps still multiply step s - 1 (two level buffers), so one
// barrier a step orders both.
__global__ void __launch_bounds__(kThreads) q8_mma_kernel(Args p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  const int warp = static_cast<int>(threadIdx.x) / kWarp, wm = warp % (kBM / kWM), wn = warp / (kBM / kWM);
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kBM, n0 = static_cast<int64_t>(blockIdx.y) * kBN;
  const int64_t steps = p.k / kBK;
  float acc[kFM][kFN][4] = {};
#pragma unroll
  for (int s0 = 0; s0 < kStages - 1; ++s0) {
    if (s0 < steps) load_step(p, s.st[s0], m0, n0, s0);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();
  decode_step(s.st[0], 0, s.b[0], s.d[0]);
  for (int64_t step = 0; step < steps; ++step) {
    // Step + 1 landed for every thread, step's levels written, step - 1's multiplied.
    cp_async_wait<kStages - 3>();
    __syncthreads();
    const int64_t next = step + kStages - 1;
    if (next < steps) load_step(p, s.st[next % kStages], m0, n0, next);
    cp_async_commit();
    if (step + 1 < steps) decode_step(s.st[(step + 1) % kStages], step + 1, s.b[(step + 1) % 2], s.d[(step + 1) % 2]);
    mma_step(p, s.st[step % kStages], s.b[step % 2], s.d[step % 2], wm, wn, acc);
  }
  store_tile(p, m0, n0, wm, wn, acc);
}

}  // namespace

bool q8_mma_supported(const Tensor& w, const Tensor& x) {
  if (w.type != DType::Q8_0 || x.type != DType::F32 || !is_contiguous(x)) return false;
  if (w.ne[2] != 1 || w.ne[3] != 1 || x.ne[2] != 1 || x.ne[3] != 1 || w.nb[0] != size_t{Q::kBlockBytes}) return false;
  // Rows on 16 bytes (K % 256 == 0: cp.async's pieces, load_step); K < 2^24 and a row stride under
  // 2^32 / kBN bytes keep the tile's offsets in 32 bits.
  const auto addr = reinterpret_cast<uintptr_t>(w.data);
  return w.ne[0] % 256 == 0 && w.ne[0] < (int64_t{1} << 24) && w.nb[1] < (size_t{1} << 32) / kBN &&
         ceil_div<int64_t>(w.ne[1], kBN) <= kMaxGridY && w.nb[1] % 16 == 0 && addr != 0 && addr % 16 == 0;
}

// One wave of output tiles should cover (nearly) every SM: with fewer, cuBLAS's smaller tiles and
// split K win (35B-A3B Q8_0 pp512 on an H100: 5,441 -> 4,961 tok/s with its [2048, 512] and
// [512, 2048] products here). And the device must give a block kSmemBytes of shared memory (sm_90
// does; sm_80 and the consumer parts do not, and keep cuBLAS).
bool q8_mma_fills(const Ctx& ctx, const Tensor& w, const Tensor& x) {
  int sms = 0, smem = 0;
  GL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device));
  GL_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.device));
  const int64_t tiles = ceil_div<int64_t>(x.ne[1], kBM) * ceil_div<int64_t>(w.ne[1], kBN);
  return static_cast<size_t>(smem) >= kSmemBytes && tiles * 10 >= int64_t{sms} * 9;
}

void q8_mma_mul_mat(const Ctx& ctx, const Tensor& w, const __half* xh, const __half* xl, Tensor& dst) {
  const Args p{static_cast<const char*>(w.data),
               static_cast<int64_t>(w.nb[1]),
               w.ne[0],
               w.ne[1],
               dst.ne[1],
               xh,
               xl,
               static_cast<float*>(dst.data),
               xl != nullptr};
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(p.m, kBM)),
                  static_cast<unsigned>(ceil_div<int64_t>(p.n, kBN)));
  GL_CUDA_CHECK(
      cudaFuncSetAttribute(q8_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemBytes)));
  q8_mma_kernel<<<grid, kThreads, kSmemBytes, ctx.stream>>>(p);
  GL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gl::cuda::mm
