// ssm_chunked.cpp - GATED_DELTA_RULE in chunked (WY / UT) form, used for prefill.
//
// Spec section 6.5. Within a chunk of L <= 64 tokens the work that does not
// depend on earlier tokens is done as small matrix products, and the state is
// read and rewritten once per chunk rather than once per token. With
// D[i][j] = exp(gamma_i - gamma_j) (gamma the in-chunk cumulative log decay) and
// P_i = exp(gamma_i):
//   A     = strictly lower (diag(beta) K K^T .* D)
//   Delta = (I + A)^-1 (diag(beta) V - diag(beta P) K S)
//   O     = diag(P) Q S + lower-incl-diag(Q K^T .* D) Delta
//   S'    = P_last S + (diag(D[last]) K)^T Delta
// Delta is the spec's U - W S with the unit-triangular solve applied once to the
// combined right-hand side (same math, fewer products). D and P are built as
// running products of the per-token decays exp(g_t), as the recurrence applies
// them (L exps per chunk instead of L^2, no overflow). The products run on the
// register-blocked gemm of gemm.cpp, K and Q stacked so each product is one call,
// and the causal ones only over their lower triangle (blocks of kTri rows); the
// solve is a forward substitution.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ggml-lite/status.h"
#include "matmul.h"
#include "ssm.h"
#include "team.h"

namespace gl::cpu {
namespace {

constexpr int64_t kC = kGdrChunk;
// Rows per block of the lower-triangular products; their columns are rounded up to kTriCols,
// a whole number of vectors (the columns past the chunk's end are finite and masked to zero).
constexpr int64_t kTri = 16;
constexpr int64_t kTriCols = 16;

// Per-thread buffers for one head; matrices are row-major, token rows have stride Dk or Dv.
struct ChunkScratch {
  std::vector<float> s;      // [Dk][Dv] running state
  std::vector<float> kq;     // [2C][Dk]: L k rows, then L q rows
  std::vector<float> kt;     // [Dk][C]: k transposed (later scaled by the key decays)
  std::vector<float> v;      // [C][Dv]: values, then Delta
  std::vector<float> gram;   // [2C][C]: L masked K K^T rows, then L masked Q K^T rows
  std::vector<float> sread;  // [2C][Dv]: L K S rows, then L Q S rows; K S rows later hold the intra-chunk outputs
  std::vector<float> decay;  // [C]: exp(g_i), then the key decays D[last][i]
  std::vector<float> cum;    // [C]: P_i
  std::vector<float> beta;   // [C]
  std::vector<float> drow;   // [C]: row i of D while masking
  explicit ChunkScratch(const GdrProblem& p) {
    const auto n = [](int64_t x) { return static_cast<size_t>(x); };
    s.resize(n(p.dk * p.dv));
    kq.resize(n(2 * kC * p.dk));
    kt.resize(n(p.dk * kC));
    v.resize(n(kC * p.dv));
    gram.resize(n(2 * kC * kC));
    sread.resize(n(2 * kC * p.dv));
    decay.resize(n(kC));
    cum.resize(n(kC));
    beta.resize(n(kC));
    drow.resize(n(kC));
  }
};

void matmul(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
            int64_t ldc, bool accumulate = false) {
  gemm({m, n, k, a, lda, b, ldb, c, ldc, accumulate});
}

// Rows of q, k, v for tokens t0 .. t0+L-1, k transposed, beta, the decays exp(g) and P.
void load_chunk(const GdrProblem& p, int64_t j, int64_t t0, int64_t len, ChunkScratch& w) {
  const int64_t dk = p.dk;
  float* k = w.kq.data();
  float* q = w.kq.data() + len * dk;
  for (int64_t i = 0; i < len; ++i) p.load_qkv(j, t0 + i, q + i * dk, k + i * dk, w.v.data() + i * p.dv);
  for (int64_t i = 0; i < len; ++i)
    for (int64_t d = 0; d < dk; ++d) w.kt[d * kC + i] = k[i * dk + d];
  p.load_gates(j, t0, len, w.decay.data(), w.beta.data());
  for (int64_t i = 0; i < len; ++i) {
    w.decay[i] = std::exp(w.decay[i]);
    w.cum[i] = i == 0 ? w.decay[0] : w.cum[i - 1] * w.decay[i];
  }
}

// Rows i0 .. i0+kTri-1 of the causal products need columns (or, for the intra-chunk output, terms)
// below i0 + kTri only.
int64_t tri_cols(int64_t i0, int64_t len) {
  return std::min(kC, (std::min(len, i0 + kTri) + kTriCols - 1) / kTriCols * kTriCols);
}

// gram[i][c] = beta_i D[i][c] k_i.k_c for c < i; gram[L + i][c] = D[i][c] q_i.k_c for c <= i; zero
// elsewhere. Also sread = [K S; Q S] from the incoming state. Leaves D[len-1] in drow.
void chunk_products(const GdrProblem& p, int64_t len, ChunkScratch& w) {
  const int64_t dk = p.dk, dv = p.dv;
  float* kk = w.gram.data();
  float* qk = w.gram.data() + len * kC;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i0 = 0; i0 < len; i0 += kTri)
      matmul(std::min(kTri, len - i0), tri_cols(i0, len), dk, w.kq.data() + (h * len + i0) * dk, dk, w.kt.data(), kC,
             w.gram.data() + (h * len + i0) * kC, kC);
  float* d = w.drow.data();
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t c = 0; c < i; ++c) d[c] *= w.decay[i];  // D[i][c] = D[i-1][c] exp(g_i)
    d[i] = 1.0f;
    for (int64_t c = 0; c < len; ++c) {
      kk[i * kC + c] = c < i ? kk[i * kC + c] * (w.beta[i] * d[c]) : 0.0f;
      qk[i * kC + c] = c <= i ? qk[i * kC + c] * d[c] : 0.0f;
    }
  }
  matmul(2 * len, dv, dk, w.kq.data(), dk, w.s.data(), dv, w.sread.data(), dv);
}

// v[i] <- Delta_i = beta_i (v_i - e^(gamma_i) (K S)_i) - sum_{m < i} A[i][m] Delta_m.
void solve_delta(const GdrProblem& p, int64_t len, ChunkScratch& w) {
  const int64_t dv = p.dv;
  for (int64_t i = 0; i < len; ++i) {
    const float e = w.cum[i], b = w.beta[i];
    float* __restrict vi = w.v.data() + i * dv;
    const float* __restrict ks = w.sread.data() + i * dv;
    for (int64_t c = 0; c < dv; ++c) vi[c] = b * (vi[c] - e * ks[c]);
    for (int64_t m = 0; m < i; ++m) {
      const float a = w.gram[i * kC + m];
      const float* __restrict vm = w.v.data() + m * dv;
      for (int64_t c = 0; c < dv; ++c) vi[c] -= a * vm[c];
    }
  }
}

// o_i = e^(gamma_i) (Q S)_i + sum_{c <= i} qk[i][c] Delta_c, written to the output rows.
void write_outputs(const GdrProblem& p, int64_t j, int64_t t0, int64_t len, ChunkScratch& w) {
  const int64_t dv = p.dv;
  float* intra = w.sread.data();  // the K S rows are no longer needed
  for (int64_t i0 = 0; i0 < len; i0 += kTri)
    matmul(std::min(kTri, len - i0), dv, std::min(len, i0 + kTri), w.gram.data() + (len + i0) * kC, kC, w.v.data(), dv,
           intra + i0 * dv, dv);
  for (int64_t i = 0; i < len; ++i) {
    const float e = w.cum[i];
    const float* qs = w.sread.data() + (len + i) * dv;
    const float* in = intra + i * dv;
    float* o = p.o_row(j, t0 + i);
    for (int64_t c = 0; c < dv; ++c) o[c] = e * qs[c] + in[c];
  }
}

// S <- P_last S + (diag(D[last]) K)^T Delta, with D[last] left in drow by chunk_products.
void update_state(const GdrProblem& p, int64_t len, ChunkScratch& w) {
  for (int64_t d = 0; d < p.dk; ++d)
    for (int64_t i = 0; i < len; ++i) w.kt[d * kC + i] *= w.drow[i];
  const float e_last = w.cum[len - 1];
  for (float& x : w.s) x *= e_last;
  matmul(p.dk, p.dv, len, w.kt.data(), kC, w.v.data(), p.dv, w.s.data(), p.dv, true);
}

void chunked_head(const GdrProblem& p, int64_t j, ChunkScratch& w) {
  p.load_state(j, w.s.data());
  for (int64_t t0 = 0; t0 < p.n_tokens; t0 += kC) {
    const int64_t len = std::min(kC, p.n_tokens - t0);
    load_chunk(p, j, t0, len, w);
    chunk_products(p, len, w);
    solve_delta(p, len, w);
    write_outputs(p, j, t0, len, w);
    update_state(p, len, w);
  }
  std::copy(w.s.begin(), w.s.end(), p.state_out(0, j));
}

}  // namespace

void gated_delta_rule_chunked(Tensor& dst) {
  const GdrProblem p(dst);
  GL_ASSERT(p.n_states == 1, "[gated_delta_rule] the chunked form emits only the final state");
  parallel_for(p.hv, p.hv > 1, [&](int64_t r_begin, int64_t r_end) {
    ChunkScratch w(p);
    for (int64_t j = r_begin; j < r_end; ++j) chunked_head(p, j, w);
  });
}

}  // namespace gl::cpu
