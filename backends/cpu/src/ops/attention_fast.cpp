// attention_fast.cpp - FLASH_ATTN under Precision::FAST over dense F32 or F16 K/V rows.
//
// A unit of work is (query row t, kv head, split of the keys): the query heads of the kv head's
// group take the split's keys a tile at a time, so a tile of K and V rows comes from memory once
// and serves every head of the group from cache. Each head keeps an online softmax (running max
// m, sum l, and the weighted sum of V rows, rescaled by exp(m_old - m_new) when the max grows).
// Scores are FMA dot products of kLanes keys at once (their sums reduced together by
// simd::vsum_lanes) and the exponentials a vector polynomial (simd::vexp_neg, < 2 ulp): results
// differ from the EXACT path by float reassociation, within the op harness's f32 bounds. Keys past
// a row's causal limit or masked off (-inf) at the end of its mask row are never read.
//
// Rows of up to kSplitRows queries (decode, MTP verify) cut their keys into splits of kSplitKeys
// at fixed positions, merged in split order afterwards: a long context spreads over the threads,
// and a row's bits depend neither on the thread count nor on the other rows of the step (greedy
// MTP parity). Prefill rows take their keys in one split.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_fast.h"
#include "parallel.h"
#include "rows.h"
#include "simd_math.h"
#include "team.h"

namespace gl::cpu {
namespace {

using simd::kLanes;
using simd::Vec;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kTile = 32;         // keys per online-softmax step
constexpr int64_t kSplitKeys = 1024;  // keys per split of a decode / verify row
constexpr int64_t kSplitRows = 32;    // rows up to this many split their keys
#if defined(__AVX512F__)
constexpr int64_t kAccVecs = 16;  // vectors of a head's V sum kept in registers per pass
#else
constexpr int64_t kAccVecs = 8;
#endif

struct Problem {
  const Tensor &q, &k, &v;
  const Tensor* mask;
  SoftmaxParams p;
  int64_t dk, dv, n_head, n_q, n_kv, group, n_splits;

  explicit Problem(const Tensor& dst)
      : q(*dst.src[0]),
        k(*dst.src[1]),
        v(*dst.src[2]),
        mask(dst.src[3]),
        p(dst.p<SoftmaxParams>()),
        dk(q.ne[0]),
        dv(v.ne[0]),
        n_head(q.ne[1]),
        n_q(q.ne[2]),
        n_kv(k.ne[2]),
        group(q.ne[1] / k.ne[1]),
        n_splits(q.ne[2] <= kSplitRows ? std::max<int64_t>(1, (k.ne[2] + kSplitKeys - 1) / kSplitKeys) : 1) {}

  const float* mask_row(int64_t t) const {
    return mask ? reinterpret_cast<const float*>(elem_ptr(*mask, 0, t, 0, 0)) : nullptr;
  }
  const void* k_row(int64_t kvh, int64_t j) const { return elem_ptr(k, 0, kvh, j, 0); }
  const void* v_row(int64_t kvh, int64_t j) const { return elem_ptr(v, 0, kvh, j, 0); }
  const float* q_row(int64_t h, int64_t t) const { return reinterpret_cast<const float*>(elem_ptr(q, 0, h, t, 0)); }
};

// One head's online softmax over the keys seen so far; acc holds dv floats.
struct HeadState {
  float m = kNegInf;
  float l = 0.0f;
  float* acc = nullptr;
};

// s[j] = q . k_{j0 + j} for j < n (n <= kTile), kLanes keys at a time.
template <DType T>
void tile_scores(const Problem& a, const float* q, int64_t kvh, int64_t j0, int64_t n, float* s) {
  for (int64_t b = 0; b < n; b += kLanes) {
    const int64_t nb = std::min<int64_t>(kLanes, n - b);
    Vec acc[kLanes];
    const void* rows[kLanes];
    for (int64_t r = 0; r < kLanes; ++r) {
      acc[r] = simd::vzero();
      rows[r] = a.k_row(kvh, j0 + b + std::min(r, nb - 1));
    }
    for (int64_t i = 0; i < a.dk; i += kLanes) {
      const Vec qv = simd::vload(q + i);
#pragma GCC unroll 16
      for (int64_t r = 0; r < kLanes; ++r) acc[r] = simd::vfma(simd::load_weights<T>(rows[r], i), qv, acc[r]);
    }
    simd::vsum_lanes(acc, s + b);  // entries past n are overwritten by the caller
  }
}

// Scaled, masked scores of the tile (entries n .. round-up to kLanes set to -inf); their max.
float finish_scores(const Problem& a, const float* mask, int64_t j0, int64_t n, float* s) {
  for (int64_t j = 0; j < n; ++j) s[j] *= a.p.scale;
  if (mask) {
    for (int64_t j = 0; j < n; ++j) s[j] += mask[j0 + j];
  }
  const int64_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (int64_t j = n; j < padded; ++j) s[j] = kNegInf;
  Vec mx = simd::vset1(kNegInf);
  for (int64_t j = 0; j < padded; j += kLanes) mx = simd::vmax(mx, simd::vload(s + j));
  return simd::vmax_all(mx);
}

// st.acc = st.acc * alpha + sum_j p[j] v_{j0 + j}, kAccVecs vectors of columns per pass.
template <DType T>
void tile_values(const Problem& a, int64_t kvh, int64_t j0, int64_t n, const float* p, float alpha, HeadState& st) {
  const Vec al = simd::vset1(alpha);
  for (int64_t c0 = 0; c0 < a.dv; c0 += kAccVecs * kLanes) {
    const int64_t nv = std::min(kAccVecs, (a.dv - c0) / kLanes);
    Vec acc[kAccVecs];
    for (int64_t u = 0; u < nv; ++u) acc[u] = simd::vmul(simd::vload(st.acc + c0 + u * kLanes), al);
    for (int64_t j = 0; j < n; ++j) {
      const void* row = a.v_row(kvh, j0 + j);
      const Vec pj = simd::vset1(p[j]);
      for (int64_t u = 0; u < nv; ++u) acc[u] = simd::vfma(pj, simd::load_weights<T>(row, c0 + u * kLanes), acc[u]);
    }
    for (int64_t u = 0; u < nv; ++u) simd::vstore(st.acc + c0 + u * kLanes, acc[u]);
  }
}

// One tile [j0, j0 + n) for one head: scores, softmax update, weighted V rows.
template <DType T>
void head_tile(const Problem& a, const float* q, const float* mask, int64_t kvh, int64_t j0, int64_t n, float* s,
               HeadState& st) {
  tile_scores<T>(a, q, kvh, j0, n, s);
  const float tile_max = finish_scores(a, mask, j0, n, s);
  if (tile_max == kNegInf) return;  // every key of the tile is masked
  const float m_new = std::max(st.m, tile_max);
  const float alpha = std::exp(st.m - m_new);  // 0 for the first tile (m = -inf)
  const Vec mv = simd::vset1(m_new);
  Vec sum = simd::vzero();
  for (int64_t j = 0; j < n; j += kLanes) {
    const Vec e = simd::vexp_neg(simd::vsub(simd::vload(s + j), mv));
    simd::vstore(s + j, e);
    sum = simd::vadd(sum, e);
  }
  st.l = st.l * alpha + simd::vsum(sum);
  st.m = m_new;
  tile_values<T>(a, kvh, j0, n, s, alpha, st);
}

// Keys [j0, j1) of kv head kvh for query row t: the group's heads, states st[0 .. group).
template <DType T>
void attend_split(const Problem& a, int64_t t, int64_t kvh, int64_t j0, int64_t j1, float* s, HeadState* st) {
  const float* mask = a.mask_row(t);
  for (int64_t g = 0; g < a.group; ++g) std::fill(st[g].acc, st[g].acc + a.dv, 0.0f);
  for (int64_t jt = j0; jt < j1; jt += kTile) {
    const int64_t n = std::min(kTile, j1 - jt);
    for (int64_t g = 0; g < a.group; ++g) head_tile<T>(a, a.q_row(kvh * a.group + g, t), mask, kvh, jt, n, s, st[g]);
  }
}

// out = acc / l (zeros for a row with no key); out may be st.acc.
void normalise(const HeadState& st, int64_t dv, float* out) {
  const float inv = st.l > 0.0f ? 1.0f / st.l : 0.0f;
  for (int64_t i = 0; i < dv; ++i) out[i] = st.acc[i] * inv;
}

// Partial state of split sp of (t, h): [m, l, acc[dv]].
float* partial(std::vector<float>& parts, const Problem& a, int64_t t, int64_t h, int64_t sp) {
  return parts.data() + ((t * a.n_head + h) * a.n_splits + sp) * (a.dv + 2);
}

// The splits of (t, h) combined in order: o = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M).
void merge_splits(Tensor& dst, const Problem& a, std::vector<float>& parts, int64_t t, int64_t h, float* out) {
  float mx = kNegInf;
  for (int64_t sp = 0; sp < a.n_splits; ++sp) mx = std::max(mx, partial(parts, a, t, h, sp)[0]);
  std::fill(out, out + a.dv, 0.0f);
  float l = 0.0f;
  if (mx != kNegInf) {
    for (int64_t sp = 0; sp < a.n_splits; ++sp) {
      const float* pt = partial(parts, a, t, h, sp);
      if (pt[0] == kNegInf) continue;
      const float w = std::exp(pt[0] - mx);
      l += pt[1] * w;
      for (int64_t i = 0; i < a.dv; ++i) out[i] += pt[2 + i] * w;
    }
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int64_t i = 0; i < a.dv; ++i) out[i] *= inv;
  store_row(dst, h, t, 0, out);
}

template <DType T>
void flash_attn_fast_typed(Tensor& dst) {
  const Problem a(dst);
  const int64_t n_kvh = a.k.ne[1], units = a.n_q * n_kvh * a.n_splits;
  std::vector<float> parts(a.n_splits > 1 ? static_cast<size_t>(a.n_q * a.n_head * a.n_splits * (a.dv + 2)) : 0);
  std::vector<int64_t> ends(static_cast<size_t>(a.n_q));
  for (int64_t t = 0; t < a.n_q; ++t) ends[t] = attn_row_end(dst, t);
  const bool worth = a.n_head * a.n_q * a.n_kv * (a.dk + a.dv) >= kParallelMinMacs;
  parallel_for(units, worth, [&](int64_t u0, int64_t u1) {
    std::vector<float> s(static_cast<size_t>(kTile + kLanes)), acc(static_cast<size_t>(a.group * a.dv));
    std::vector<HeadState> st(static_cast<size_t>(a.group));
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t sp = u % a.n_splits, kvh = u / a.n_splits % n_kvh, t = u / (a.n_splits * n_kvh);
      const int64_t end = ends[t], j0 = std::min(end, sp * kSplitKeys);
      const int64_t j1 = a.n_splits > 1 ? std::min(end, j0 + kSplitKeys) : end;
      for (int64_t g = 0; g < a.group; ++g) st[g] = {.acc = acc.data() + g * a.dv};
      attend_split<T>(a, t, kvh, j0, j1, s.data(), st.data());
      for (int64_t g = 0; g < a.group; ++g) {
        const int64_t h = kvh * a.group + g;
        if (a.n_splits == 1) {
          normalise(st[g], a.dv, st[g].acc);
          store_row(dst, h, t, 0, st[g].acc);
          continue;
        }
        float* pt = partial(parts, a, t, h, sp);
        pt[0] = st[g].m;
        pt[1] = st[g].l;
        std::copy(st[g].acc, st[g].acc + a.dv, pt + 2);
      }
    }
  });
  if (a.n_splits == 1) return;
  parallel_for(a.n_q * a.n_head, worth, [&](int64_t r0, int64_t r1) {
    std::vector<float> out(static_cast<size_t>(a.dv));
    for (int64_t r = r0; r < r1; ++r) merge_splits(dst, a, parts, r / a.n_head, r % a.n_head, out.data());
  });
}

}  // namespace

int64_t attn_row_end(const Tensor& dst, int64_t t) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1];
  const Tensor* mask = dst.src[3];
  const int64_t n_q = q.ne[2], n_kv = k.ne[2];
  int64_t e = std::clamp<int64_t>(dst.p<SoftmaxParams>().causal ? t + (n_kv - n_q) + 1 : n_kv, 0, n_kv);
  if (mask) {
    const char* m = elem_ptr(*mask, 0, t, 0, 0);
    while (e > 0 && *reinterpret_cast<const float*>(m + (e - 1) * mask->nb[0]) == kNegInf) --e;
  }
  return e;
}

bool flash_attn_fast_fits(const Tensor& dst) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  if (!is_f32_rows(q) || k.type != v.type || (k.type != DType::F32 && k.type != DType::F16)) return false;
  if (!has_dense_rows(k) || !has_dense_rows(v) || (mask && !is_f32_rows(*mask))) return false;
  if (q.ne[3] != 1 || k.ne[3] != 1 || v.ne[3] != 1 || q.ne[1] % k.ne[1] != 0) return false;
  return q.ne[0] % kLanes == 0 && v.ne[0] % kLanes == 0;
}

void flash_attn_fast(Tensor& dst) {
  if (dst.src[1]->type == DType::F16) return flash_attn_fast_typed<DType::F16>(dst);
  flash_attn_fast_typed<DType::F32>(dst);
}

}  // namespace gl::cpu
