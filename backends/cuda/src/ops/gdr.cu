// gdr.cu - GATED_DELTA_RULE on CUDA: the token recurrence of Gated DeltaNet.
//
// Why this layout: column iv of a head's state S [Dk][Dv] evolves on its own -- per token it needs
// only k, q, g, beta, v[iv] and u[iv] = sum_ik S[ik][iv] k[ik] -- so a block owns one value head
// and 32 state columns (one per lane, coalesced with the state's iv-fastest layout) and its 8 warps
// split the Dk rows, each thread keeping its rows of its column in registers. The two Dk sums per
// token (u = S^T k after the decay, o = S^T q after the write) are per-thread fmaf chains, then a
// fixed-order sum over the warps through shared memory. Outputs and the n_states snapshots go to
// the flat F32 result; the input state (the cache) is only read, unless the step's CPY of the last
// state back into it is fused (gated_delta_rule_fused: each thread then overwrites the elements it
// read). The next token's inputs are loaded before the current token's sums to hide their latency.
// Every token is a step, so prefill costs T dependent steps per head: long single-state calls go to
// the chunked form in gdr_chunked.cu instead.
//
// The decode graph's gated RMSNorm (o -> rms_norm per value head -> x weight -> x silu(z)) may run
// as the kernel's tail: the last of a head's column blocks to finish (an arrival count per head,
// Ctx::arrivals) reads the head's whole o row and normalises it, with the unfused kernels'
// arithmetic (short_norm_kernel's sum order, the float products), and under FAST also writes the
// output projection's int8 rows. Three launches fewer per GDN layer. (A thread-block cluster of
// the column blocks with a cluster barrier was measured slower than the three kernels: 9B Q8_0
// decode 187 -> 183 tok/s on the H100; likely fewer heads resident at once, one 168-register
// block a SM and clusters of 4 kept within a GPC.)
#include "cuda_utils.cuh"
#include "kernels.cuh"
#include "mm_utils.cuh"
#include "q8_input.cuh"
#include "warp_norm.cuh"

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

// The gated RMSNorm tail (all dense F32): y = rms_norm(o) per value head, m = y w (w: one row of
// Dv), gated = z m (z: silu of the gate, [Dv Hv, T]); q8: gated's rows as int8 blocks of 32 (the
// output projection's, at q8_stride), or nullptr.
struct GatedNorm {
  float *y = nullptr, *m = nullptr, *gated = nullptr;
  const float *w = nullptr, *z = nullptr;
  char* q8 = nullptr;
  int64_t q8_stride = 0;
  double eps = 0.0;
  unsigned* arrivals = nullptr;  // a zero count per value head, left zero
};
// Value heads up to this wide: one lane's 8 elements of a row, as short_norm_kernel holds them.
constexpr int64_t kGatedMaxDv = 256;

// Element (i0, i1, i2) of an input: any float dtype through load_scalar, or (kF32: every input F32
// with unit element stride, as the model feeds them) a plain float load. The dtype branches and
// their conversions had ncu count ~2,200 instructions a warp in a 9B decode layer, 14 us (H100).
template <bool kF32>
__device__ __forceinline__ float at(const TView& t, int64_t i0, int64_t i1, int64_t i2) {
  const char* p = t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2];
  if constexpr (kF32) {
    return *reinterpret_cast<const float*>(p);
  } else {
    return mm::load_scalar(t.type, p);
  }
}

// Whether every input is F32 with unit element stride (gdr_kernel's kF32).
bool f32_inputs(const GdrArgs& a) {
  for (const TView* t : {&a.q, &a.k, &a.v, &a.g, &a.beta, &a.state})
    if (t->type != DType::F32 || t->nb[0] != sizeof(float)) return false;
  return true;
}

// One token's inputs as this thread needs them: its k and q rows, v of its column, the gates.
template <int kRows>
struct Token {
  float k[kRows], q[kRows];
  float v, decay, beta;
};

template <int kRows, bool kF32>
__device__ __forceinline__ void load_token(const GdrArgs& a, int64_t j, int64_t iv, int64_t ik0, int64_t t,
                                           Token<kRows>& tk) {
  const int64_t jk = j % a.hk;  // value head j reads key head j % Hk
  // F32: this thread's rows of k and q from their first element, one address each.
  if constexpr (kF32) {
    const float* kr = reinterpret_cast<const float*>(a.k.data + jk * a.k.nb[1] + t * a.k.nb[2]) + ik0;
    const float* qr = reinterpret_cast<const float*>(a.q.data + jk * a.q.nb[1] + t * a.q.nb[2]) + ik0;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const bool in = ik0 + i < a.dk;
      tk.k[i] = in ? kr[i] : 0.0f;
      tk.q[i] = in ? qr[i] : 0.0f;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const bool in = ik0 + i < a.dk;
      tk.k[i] = in ? at<false>(a.k, ik0 + i, jk, t) : 0.0f;
      tk.q[i] = in ? at<false>(a.q, ik0 + i, jk, t) : 0.0f;
    }
  }
  tk.v = at<kF32>(a.v, iv, j, t);
  tk.decay = expf(at<kF32>(a.g, j, t, 0));
  tk.beta = at<kF32>(a.beta, j, t, 0);
}

// Whether this block is the last of head j's column blocks to have written its o (every thread
// gets the answer); the last one resets the count for the next launch.
__device__ bool last_of_head(unsigned* arrivals, int64_t j) {
  __shared__ bool last;
  __syncthreads();  // the block's o stores are issued
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();  // and visible device-wide before the count says so
    last = atomicAdd(arrivals + j, 1u) == gridDim.x - 1;
    if (last) arrivals[j] = 0;
    __threadfence();
  }
  __syncthreads();
  return last;
}

// The last column block of head j: work item (token t, slot e) stores elements l + 32 e of token
// t's row (lane l); its warp first sums the squares of the whole row as short_norm_kernel does
// (lane l holds elements l + 32 e' in double, then the warp's xor tree), so every item of a token
// has the same bits. A warp takes items warp, warp + kGdrWarps, ...: a decode token's Dv / 32 slots
// go to as many warps (the stores and int8 blocks of a slot were one warp's serial work).
__device__ void gated_norm_tail(const GdrArgs& a, const GatedNorm& n, int64_t j, int lane, int warp) {
  constexpr int kE = kGatedMaxDv / kWarp;
  const int64_t slots = a.dv / kWarp;  // dv is whole warps
  const int64_t items = a.n_tokens * slots;
  float wv = 0.0f, zv = 0.0f;  // the weight and gate element of the item's slot
  auto load_wz = [&](int64_t item) {
    const int64_t t = item / slots, i0 = lane + int64_t{kWarp} * (item % slots);
    wv = n.w[i0];
    zv = n.z[(t * a.hv + j) * a.dv + i0];
  };
  // The warp's first item's before the count (every block: they do not depend on o), so that
  // only o's reads follow it.
  if (warp < items) load_wz(warp);
  if (!last_of_head(n.arrivals, j)) return;
  for (int64_t item = warp; item < items; item += kGdrWarps) {
    if (item != warp) load_wz(item);
    const int64_t t = item / slots;
    const int e = static_cast<int>(item % slots);
    const float* o = a.out + (t * a.hv + j) * a.dv;
    float x[kE];
#pragma unroll
    for (int k = 0; k < kE; ++k) {
      const int64_t i0 = lane + int64_t{kWarp} * k;
      x[k] = i0 < a.dv ? __ldcg(o + i0) : 0.0f;  // from L2: other blocks wrote most of them
    }
    const double inv = 1.0 / sqrt(warp_sum_squares(x) / static_cast<double>(a.dv) + n.eps);
    float xe = x[0];  // x[e] by selects: a dynamic index would put x in local memory
#pragma unroll
    for (int k = 1; k < kE; ++k)
      if (k == e) xe = x[k];
    const int64_t i = (t * a.hv + j) * a.dv + lane + int64_t{kWarp} * e;
    const float y = static_cast<float>(static_cast<double>(xe) * inv);
    const float m = y * wv;
    const float g = zv * m;
    n.y[i] = y;
    n.m[i] = m;
    n.gated[i] = g;
    if (n.q8) mm::warp_quantize_q8(g, n.q8 + t * n.q8_stride, a.dv * a.hv, j * a.dv / kWarp + e, lane);
  }
}

// Block (32 lanes = state columns, kGdrWarps warps = row slices); grid (column blocks, value heads);
// with kGated, gated_norm_tail after the tokens.
template <int kRows, bool kGated, bool kF32>
__global__ void __launch_bounds__(kWarp* kGdrWarps) gdr_kernel(GdrArgs a, GatedNorm norm) {
  pdl_trigger();
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
  for (int i = 0; i < kRows; ++i) s[i] = owns_col && ik0 + i < a.dk ? at<kF32>(a.state, iv, ik0 + i, j) : 0.0f;

  const int64_t first_snapshot = a.n_tokens - a.n_states;
  // Element (ik0, iv) of head j's state in a [Dv, Dk, Hv] array; row i is i * Dv further.
  const int64_t own = (j * a.dk + ik0) * a.dv + iv;
  float* states = a.out + a.dv * a.hv * a.n_tokens + own;
  Token<kRows> cur;
  load_token<kRows, kF32>(a, j, iv, ik0, 0, cur);
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    Token<kRows> next = cur;
    if (t + 1 < a.n_tokens) load_token<kRows, kF32>(a, j, iv, ik0, t + 1, next);

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
      float* snap = states + (t - first_snapshot) * a.hv * a.dk * a.dv;
#pragma unroll
      for (int i = 0; i < kRows; ++i)
        if (ik0 + i < a.dk) snap[i * a.dv] = s[i];
    }
    if (a.cache && t == a.n_tokens - 1 && owns_col) {  // the elements this thread read at the start
#pragma unroll
      for (int i = 0; i < kRows; ++i)
        if (ik0 + i < a.dk) a.cache[own + i * a.dv] = s[i];
    }
    cur = next;
  }
  if constexpr (kGated) gated_norm_tail(a, norm, j, lane, warp);
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

template <int kRows, bool kF32>
void launch_typed(const Ctx& ctx, const GdrArgs& a, const GatedNorm* norm) {
  const dim3 grid(static_cast<unsigned>(mm::ceil_div<int64_t>(a.dv, kWarp)), static_cast<unsigned>(a.hv));
  const dim3 block(kWarp, kGdrWarps);
  if (norm) {
    gdr_kernel<kRows, true, kF32><<<grid, block, 0, ctx.stream>>>(a, *norm);
  } else {
    gdr_kernel<kRows, false, kF32><<<grid, block, 0, ctx.stream>>>(a, GatedNorm{});
  }
  GL_CUDA_CHECK(cudaGetLastError());
}

template <int kRows>
void launch(const Ctx& ctx, const GdrArgs& a, const GatedNorm* norm) {
  if (f32_inputs(a)) return launch_typed<kRows, true>(ctx, a, norm);
  launch_typed<kRows, false>(ctx, a, norm);
}

}  // namespace

size_t gated_delta_rule_workspace(const Tensor& dst) {
  return takes_chunked(dst) ? gated_delta_rule_chunked_workspace(dst) : 0;
}

namespace {

void run_gdr(const Ctx& ctx, Tensor& dst, float* cache, const GatedNorm* norm = nullptr) {
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
  if (rows <= 1) return launch<1>(ctx, a, norm);
  if (rows <= 2) return launch<2>(ctx, a, norm);
  if (rows <= 4) return launch<4>(ctx, a, norm);
  if (rows <= 8) return launch<8>(ctx, a, norm);
  if (rows <= 16) return launch<16>(ctx, a, norm);
  if (a.dk > mm::kMaxGdrDk) fail(__FILE__, __LINE__, "gated_delta_rule", "Dk above kMaxGdrDk (supports_ssm)");
  launch<32>(ctx, a, norm);
}

}  // namespace

void gated_delta_rule(const Ctx& ctx, Tensor& dst) { run_gdr(ctx, dst, nullptr); }

namespace {

// The CPY after g (nodes[0]) that puts g's last state back into the cache it read, with no node
// between touching the cache; nullptr when there is none.
const Tensor* state_copy(std::span<Tensor* const> nodes) {
  const Tensor& g = *nodes[0];
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
        src->view_offs == last && src->type == DType::F32 && same_shape(*src, cache) && is_contiguous(*src))
      return &c;
    if (touches(c, cache)) return nullptr;  // read or written before the copy: the cache must wait
  }
  return nullptr;
}

bool dense(const Tensor& t) { return t.type == DType::F32 && is_contiguous(t); }

// Two of the tail's dense F32 tensors one thread writes or reads element by element: apart, or
// the same elements.
bool apart_or_same(const Tensor& a, const Tensor& b) {
  return disjoint(a, b) || (a.data == b.data && nelements(a) == nelements(b));
}

// nodes[1..5] as the decode graph builds the gated RMSNorm of g's output: VIEW(o) -> RMS_NORM ->
// MUL(weight row) -> RESHAPE to [Dv Hv, T] -> MUL with z (either side), all dense F32, Dv whole
// warps. Returns z, or nullptr when the nodes have another shape.
const Tensor* gated_norm_nodes(std::span<Tensor* const> nodes) {
  if (nodes.size() < 6) return nullptr;
  const Tensor& g = *nodes[0];
  const Tensor &o = *nodes[1], &y = *nodes[2], &m = *nodes[3], &r = *nodes[4], &gated = *nodes[5];
  const int64_t dv = g.src[2]->ne[0], hv = g.src[2]->ne[1], n_t = g.src[2]->ne[2];
  if (dv % kWarp != 0 || dv > kGatedMaxDv || hv > kArrivalSlots || o.op != Op::VIEW || o.view_src != &g ||
      o.view_offs != 0)
    return nullptr;
  if (o.ne != std::array<int64_t, kMaxDims>{dv, hv, n_t, 1} || !dense(o)) return nullptr;
  if (y.op != Op::RMS_NORM || y.src[0] != &o || !dense(y) || !same_shape(y, o)) return nullptr;
  if (m.op != Op::MUL || m.src[0] != &y || !dense(m) || !same_shape(m, y)) return nullptr;
  const Tensor& w = *m.src[1];
  if (!dense(w) || w.ne[0] != dv || nelements(w) != dv) return nullptr;
  if (r.op != Op::RESHAPE || r.src[0] != &m || r.data != m.data || r.ne[0] != dv * hv || r.ne[1] != n_t) return nullptr;
  if (gated.op != Op::MUL || (gated.src[0] != &r && gated.src[1] != &r)) return nullptr;
  const Tensor& z = *gated.src[gated.src[0] == &r ? 1 : 0];
  return dense(z) && dense(gated) && same_shape(z, gated) && same_shape(gated, r) ? &z : nullptr;
}

// The tail's outputs against what the kernel reads: apart from g's inputs, result and the weight
// (other blocks read them); apart or the same elements among themselves. z is read before the
// thread's stores, so only the last result may lie on it (z must not be y or m). z and the weight
// are read before a head's blocks have all written their o: neither may lie on g's result.
bool gated_norm_safe(std::span<Tensor* const> nodes, const Tensor& z) {
  const Tensor& g = *nodes[0];
  const Tensor &y = *nodes[2], &m = *nodes[3], &gated = *nodes[5];
  if (!disjoint(z, g) || !disjoint(*m.src[1], g)) return false;
  for (const Tensor* out : {&y, &m, &gated}) {
    if (!disjoint(*out, g) || !disjoint(*out, *m.src[1])) return false;
    for (int i = 0; i < 6; ++i)
      if (!disjoint(*out, *g.src[i])) return false;
  }
  return apart_or_same(y, m) && apart_or_same(y, gated) && apart_or_same(m, gated) && disjoint(z, y) &&
         disjoint(z, m) && apart_or_same(z, gated);
}

// The int8 rows of gated for next (an int8 GEMV of it), where they overlap nothing the kernel reads
// or writes; nullptr otherwise.
char* gated_q8_rows(const Ctx& ctx, std::span<Tensor* const> nodes, const Tensor& z) {
  const Tensor& gated = *nodes[5];
  char* q = q8_input_target(ctx, gated, nodes.size() > 6 ? nodes[6] : nullptr);
  if (!q) return nullptr;
  const size_t n = q8_rows_bytes(gated);
  const Tensor& g = *nodes[0];
  const Tensor* touched[] = {&g, nodes[2], nodes[3], nodes[5], &z, nodes[3]->src[1]};
  for (const Tensor* t : touched)
    if (bytes_overlap(q, n, t->data, nbytes(*t))) return nullptr;
  for (int i = 0; i < 6; ++i)
    if (bytes_overlap(q, n, g.src[i]->data, nbytes(*g.src[i]))) return nullptr;
  return q;
}

}  // namespace

int gated_delta_rule_fused(const Ctx& ctx, std::span<Tensor* const> nodes, const Tensor** carried) {
  *carried = nullptr;
  Tensor& g = *nodes[0];
  if (g.op != Op::GATED_DELTA_RULE || takes_chunked(g)) return 0;
  const Tensor* cpy = state_copy(nodes);
  const Tensor* z = gated_norm_nodes(nodes);
  const bool gated = z && gated_norm_safe(nodes, *z);
  if (!cpy && !gated) return 0;
  float* cache = cpy ? static_cast<float*>(g.src[5]->data) : nullptr;
  *carried = cpy;
  if (!gated) {
    run_gdr(ctx, g, cache);
    return 1;
  }
  GatedNorm n;
  n.y = static_cast<float*>(nodes[2]->data);
  n.m = static_cast<float*>(nodes[3]->data);
  n.gated = static_cast<float*>(nodes[5]->data);
  n.w = static_cast<const float*>(nodes[3]->src[1]->data);
  n.z = static_cast<const float*>(z->data);
  n.q8 = gated_q8_rows(ctx, nodes, *z);
  n.q8_stride = mm::q8_row_stride(nodes[5]->ne[0]);
  n.eps = static_cast<double>(nodes[2]->p<NormParams>().eps);
  n.arrivals = ctx.arrivals;
  run_gdr(ctx, g, cache, &n);
  if (n.q8) *ctx.q8 = {n.q8, nodes[5], nodes[5]->data};
  return 6;
}

}  // namespace gl::cuda
