// gdr.cu - GATED_DELTA_RULE on CUDA: the token recurrence of Gated DeltaNet.
//
// Why this layout: column iv of a head's state S [Dk][Dv] evolves on its own -- per token it needs
// only k, q, g, beta, v[iv] and u[iv] = sum_ik S[ik][iv] k[ik] -- so a block owns one value head
// and 32 state columns (one per lane, coalesced with the state's iv-fastest layout) and its 8 warps
// split the Dk rows, each thread keeping its rows of its column in registers. The two Dk sums per
// token (u = S^T k after the decay, o = S^T q after the write) are per-thread fmaf chains, then a
// fixed-order sum over the warps through shared memory. The input state (the cache) is only read;
// outputs and the n_states snapshots go to the flat F32 result. The next token's inputs are loaded
// before the current token's sums to hide their latency.
// Every token is a step, so prefill costs T dependent steps per head: long single-state calls go to
// the chunked form in gdr_chunked.cu instead.
#include "cuda_utils.cuh"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

using mm::kWarp;
using mm::TView;

constexpr int kGdrWarps = 8;
// The chunked form from this many tokens on (n_states == 1 only). Measured on the H200 (ncu, base
// clock) at the Qwen3.5-9B shape (Hv 32, Dk = Dv = 128): this kernel takes ~3 us per token, the
// chunked form ~60 us for up to one 64-token chunk (three launches, one scan step), so they meet
// near 20 tokens; 32 leaves a margin. Decode and MTP verify (a few tokens, n_states > 1) stay here.
constexpr int64_t kChunkedMinTokens = 32;

struct GdrArgs {
  TView q, k, v, g, beta, state;
  int64_t dk, hk, dv, hv, n_tokens, n_states;
  float* out;  // o [Dv, Hv, T], then n_states states [Dv, Dk, Hv]
  // Also the last state here (dense [Dv, Dk, Hv]: the state read, in place). The cache is then
  // advanced at this kernel, not at the end of the step: a later node's failure leaves it moved.
  float* cache = nullptr;
};

__device__ __forceinline__ float at(const TView& t, int64_t i0, int64_t i1, int64_t i2) {
  return mm::load_scalar(t.type, t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]);
}

// One token's inputs as this thread needs them: its k and q rows, v of its column, the gates.
template <int kRows>
struct Token {
  float k[kRows], q[kRows];
  float v, decay, beta;
};

template <int kRows>
__device__ __forceinline__ void load_token(const GdrArgs& a, int64_t j, int64_t iv, int64_t ik0, int64_t t,
                                           Token<kRows>& tk) {
  const int64_t jk = j % a.hk;  // value head j reads key head j % Hk
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const bool in = ik0 + i < a.dk;
    tk.k[i] = in ? at(a.k, ik0 + i, jk, t) : 0.0f;
    tk.q[i] = in ? at(a.q, ik0 + i, jk, t) : 0.0f;
  }
  tk.v = at(a.v, iv, j, t);
  tk.decay = expf(at(a.g, j, t, 0));
  tk.beta = at(a.beta, j, t, 0);
}

// Block (32 lanes = state columns, kGdrWarps warps = row slices); grid (column blocks, value heads).
template <int kRows>
__global__ void __launch_bounds__(kWarp* kGdrWarps) gdr_kernel(GdrArgs a) {
  __shared__ float red_u[kGdrWarps][kWarp];
  __shared__ float red_o[kGdrWarps][kWarp];
  const int lane = static_cast<int>(threadIdx.x), warp = static_cast<int>(threadIdx.y);
  const int64_t j = blockIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kWarp + lane;
  const bool owns_col = col < a.dv;
  const int64_t iv = owns_col ? col : 0;  // idle lanes compute on a zero state and write nothing
  const int64_t ik0 = static_cast<int64_t>(warp) * kRows;

  float s[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) s[i] = owns_col && ik0 + i < a.dk ? at(a.state, iv, ik0 + i, j) : 0.0f;

  const int64_t first_snapshot = a.n_tokens - a.n_states;
  float* states = a.out + a.dv * a.hv * a.n_tokens;
  Token<kRows> cur;
  load_token<kRows>(a, j, iv, ik0, 0, cur);
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    Token<kRows> next = cur;
    if (t + 1 < a.n_tokens) load_token<kRows>(a, j, iv, ik0, t + 1, next);

    // S = exp(g) S; u = S^T k
    float pu = 0.0f;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      s[i] *= cur.decay;
      pu = fmaf(s[i], cur.k[i], pu);
    }
    red_u[warp][lane] = pu;
    __syncthreads();
    float u = 0.0f;
#pragma unroll
    for (int w = 0; w < kGdrWarps; ++w) u += red_u[w][lane];
    const float d = cur.beta * (cur.v - u);

    // S += k d^T; o = S^T q
    float po = 0.0f;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      s[i] = fmaf(cur.k[i], d, s[i]);
      po = fmaf(s[i], cur.q[i], po);
    }
    red_o[warp][lane] = po;
    __syncthreads();  // also orders this token's red_u reads before the next token's writes
    if (warp == 0 && owns_col) {
      float o = 0.0f;
#pragma unroll
      for (int w = 0; w < kGdrWarps; ++w) o += red_o[w][lane];
      a.out[(t * a.hv + j) * a.dv + iv] = o;
    }
    if (t >= first_snapshot && owns_col) {
      float* snap = states + ((t - first_snapshot) * a.hv + j) * a.dk * a.dv;
#pragma unroll
      for (int i = 0; i < kRows; ++i)
        if (ik0 + i < a.dk) snap[(ik0 + i) * a.dv + iv] = s[i];
    }
    if (a.cache && t == a.n_tokens - 1 && owns_col) {  // the elements this thread read at the start
#pragma unroll
      for (int i = 0; i < kRows; ++i)
        if (ik0 + i < a.dk) a.cache[(j * a.dk + ik0 + i) * a.dv + iv] = s[i];
    }
    cur = next;
  }
}

// The chunked form reads q, k, v, g and beta as F32 (what the model feeds); other types stay here.
bool chunked_inputs(const Tensor& dst) {
  for (int i = 0; i < 5; ++i)
    if (dst.src[i]->type != DType::F32) return false;
  return true;
}

// Whether gated_delta_rule hands the node to the chunked form (one final state, prefill lengths).
bool takes_chunked(const Tensor& dst) {
  const Tensor& v = *dst.src[2];
  const int64_t n_tokens = dst.src[0]->ne[2];
  if (n_tokens == 0 || v.ne[0] == 0 || v.ne[1] == 0) return false;
  return dst.p<GdrParams>().n_states == 1 && n_tokens >= kChunkedMinTokens && chunked_inputs(dst);
}

template <int kRows>
void launch(const Ctx& ctx, const GdrArgs& a) {
  const dim3 grid(static_cast<unsigned>(mm::ceil_div<int64_t>(a.dv, kWarp)), static_cast<unsigned>(a.hv));
  gdr_kernel<kRows><<<grid, dim3(kWarp, kGdrWarps), 0, ctx.stream>>>(a);
  GL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

size_t gated_delta_rule_workspace(const Tensor& dst) {
  return takes_chunked(dst) ? gated_delta_rule_chunked_workspace(dst) : 0;
}

namespace {

void run_gdr(const Ctx& ctx, Tensor& dst, float* cache) {
  const Tensor& q = *dst.src[0];
  const Tensor& v = *dst.src[2];
  const GdrArgs a{mm::view_of(q),
                  mm::view_of(*dst.src[1]),
                  mm::view_of(v),
                  mm::view_of(*dst.src[3]),
                  mm::view_of(*dst.src[4]),
                  mm::view_of(*dst.src[5]),
                  q.ne[0],
                  q.ne[1],
                  v.ne[0],
                  v.ne[1],
                  q.ne[2],
                  dst.p<GdrParams>().n_states,
                  static_cast<float*>(dst.data),
                  cache};
  if (a.n_tokens == 0 || a.dv == 0 || a.hv == 0) return;
  if (takes_chunked(dst)) return gated_delta_rule_chunked(ctx, dst);
  // Rows per thread: Dk split over the warps, rounded up to a power of two.
  const int64_t rows = mm::ceil_div<int64_t>(a.dk, kGdrWarps);
  if (rows <= 1) return launch<1>(ctx, a);
  if (rows <= 2) return launch<2>(ctx, a);
  if (rows <= 4) return launch<4>(ctx, a);
  if (rows <= 8) return launch<8>(ctx, a);
  if (rows <= 16) return launch<16>(ctx, a);
  if (a.dk > mm::kMaxGdrDk) fail(__FILE__, __LINE__, "gated_delta_rule", "Dk above kMaxGdrDk (supports_ssm)");
  launch<32>(ctx, a);
}

}  // namespace

void gated_delta_rule(const Ctx& ctx, Tensor& dst) { run_gdr(ctx, dst, nullptr); }

const Tensor* gated_delta_rule_to_cache(const Ctx& ctx, std::span<Tensor* const> nodes) {
  Tensor& g = *nodes[0];
  if (g.op != Op::GATED_DELTA_RULE || takes_chunked(g)) return nullptr;
  const Tensor& cache = *g.src[5];
  const Tensor& v = *g.src[2];
  const int64_t dk = g.src[0]->ne[0], dv = v.ne[0], hv = v.ne[1], n_tokens = v.ne[2];
  const int64_t n_states = g.p<GdrParams>().n_states;
  if (cache.type != DType::F32 || cache.view_src || !is_contiguous(cache) || nelements(cache) != dv * dk * hv)
    return nullptr;
  const size_t last = static_cast<size_t>(dv * hv * n_tokens + (n_states - 1) * dv * dk * hv) * sizeof(float);
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Tensor& c = *nodes[i];
    const Tensor* src = c.src[0];
    if (c.op == Op::CPY && c.src[1] == &cache && c.data == cache.data && src && src->view_src == &g &&
        src->view_offs == last && src->type == DType::F32 && same_shape(*src, cache) && is_contiguous(*src)) {
      run_gdr(ctx, g, static_cast<float*>(cache.data));
      return &c;
    }
    if (touches(c, cache)) return nullptr;  // read or written before the copy: the cache must wait
  }
  return nullptr;
}

}  // namespace gl::cuda
