// attention.cpp - CPU reference for the attention softmax, fused attention and rotary embeddings.
//
// SOFTMAX works on one score row at a time in float (like the fp32 attention of
// the reference models) with a double sum; a row whose every entry is masked
// yields zeros rather than 0/0 = NaN. ROPE computes its angles, sin and cos and
// the rotation itself in double and rounds once to float: at positions in the
// hundreds of thousands a float angle is off by ~1e-2 rad, which would make the
// reference the least accurate backend. Both read a whole row into scratch (or
// each rotated pair into locals) before writing it, so dst may alias src[0].
// FLASH_ATTN under Precision::FAST is attention_fast.cpp (online softmax, FMA dot products).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "attention_fast.h"
#include "ggml-lite/status.h"
#include "kernels.h"
#include "parallel.h"
#include "rows.h"
#include "simd.h"
#include "team.h"

namespace gl::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// w[j] = x[j] * scale + mask[j] for j < end, where end = n or, causally, the first
// masked column; returns end (entries from end on are never read).
int64_t masked_scores(float* w, int64_t n, float scale, const Tensor* mask, int64_t i1, int64_t last) {
  const int64_t end = std::clamp<int64_t>(last + 1, 0, n);
  for (int64_t j = 0; j < end; ++j) w[j] *= scale;
  if (mask) {
    const char* m = elem_ptr(*mask, 0, i1, 0, 0);
    for (int64_t j = 0; j < end; ++j) w[j] += *reinterpret_cast<const float*>(m + j * mask->nb[0]);
  }
  return end;
}

// Softmax of w[0, end) in place, zeros in w[end, n); a row with no finite maximum
// (everything masked) becomes all zeros instead of 0/0.
void softmax_row(float* w, int64_t end, int64_t n) {
  float mx = kNegInf;
  for (int64_t j = 0; j < end; ++j) mx = w[j] > mx ? w[j] : mx;
  if (mx == kNegInf) end = 0;
  double sum = 0.0;
  for (int64_t j = 0; j < end; ++j) {
    w[j] = std::exp(w[j] - mx);
    sum += static_cast<double>(w[j]);
  }
  const double inv = 1.0 / sum;  // double product: still one float rounding per element
  for (int64_t j = 0; j < end; ++j) w[j] = static_cast<float>(static_cast<double>(w[j]) * inv);
  for (int64_t j = end; j < n; ++j) w[j] = 0.0f;
}

// Position of token t, read from pos (I32, any shape with one element per token).
int32_t position(const Tensor& pos, int64_t t) {
  const int64_t i0 = t % pos.ne[0];
  const int64_t i1 = (t / pos.ne[0]) % pos.ne[1];
  const int64_t i2 = (t / (pos.ne[0] * pos.ne[1])) % pos.ne[2];
  const int64_t i3 = t / (pos.ne[0] * pos.ne[1] * pos.ne[2]);
  return *reinterpret_cast<const int32_t*>(elem_ptr(pos, i0, i1, i2, i3));
}

// Rotates the first n_dims of row x (D floats) in place with per-frequency cos/sin.
void rope_row(float* x, const double* cs, const double* sn, int32_t n_dims, RopeMode mode) {
  const int32_t half = n_dims / 2;
  for (int32_t i = 0; i < half; ++i) {
    const int32_t i0 = mode == RopeMode::NEOX ? i : 2 * i;
    const int32_t i1 = mode == RopeMode::NEOX ? i + half : 2 * i + 1;
    const double x0 = static_cast<double>(x[i0]);
    const double x1 = static_cast<double>(x[i1]);
    x[i0] = static_cast<float>(x0 * cs[i] - x1 * sn[i]);
    x[i1] = static_cast<float>(x1 * cs[i] + x0 * sn[i]);
  }
}

#if defined(__AVX2__)
// r[c] = column c of the 8x8 block whose rows are r[0..7].
void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// 8 stored K or V values from p as floats: F32 rows, or F16 rows converted exactly (vcvtph2ps).
template <class E>
__m256 load8(const E* p) {
  if constexpr (std::is_same_v<E, fp16_t>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    return _mm256_loadu_ps(p);
  }
}
template <class E>
float load1(const E* p) {
  if constexpr (std::is_same_v<E, fp16_t>) {
    return fp16_to_fp32(*p);
  } else {
    return *p;
  }
}

// w_g[j] = q_g . k_j for keys [0, end) of kv head kv and G query heads of its group (each K row read
// once for all G), K stored as E (float or fp16_t), one key per lane, each lane adding its products one by one from 0
// in element order (separate multiply and add): the exact path's sums, bit for bit.
template <int G, class E>
void scores_exact(const float* const* q, const Tensor& k, int64_t kv, int64_t end, int64_t dk, float* const* w) {
  int64_t j = 0;
  for (; j + 8 <= end; j += 8) {
    const char* base = elem_ptr(k, 0, kv, j, 0);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t i0 = 0; i0 < dk; i0 += 8) {
      __m256 c[8];
      for (int l = 0; l < 8; ++l) c[l] = load8(reinterpret_cast<const E*>(base + l * k.nb[2]) + i0);
      transpose8(c);
      for (int i = 0; i < 8; ++i)
        for (int g = 0; g < G; ++g) acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_set1_ps(q[g][i0 + i]), c[i]));
    }
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(w[g] + j, acc[g]);
  }
  for (; j < end; ++j) {
    const auto* kr = reinterpret_cast<const E*>(elem_ptr(k, 0, kv, j, 0));
    for (int g = 0; g < G; ++g) {
      float dot = 0.0f;
      for (int64_t i = 0; i < dk; ++i) dot += q[g][i] * load1(kr + i);
      w[g][j] = dot;
    }
  }
}

// Each pass over the V rows covers kAccVecs / G vectors of the G rows' columns: a head of up to 64
// (AVX-512's 32 vector registers) or 32 (AVX2's 16) columns for a pair of heads is one pass, so a
// long V span streams from memory once, not once per 32 columns.
#if defined(__AVX512F__)
constexpr int64_t kAccVecs = 16;
#else
constexpr int64_t kAccVecs = 8;
#endif

// acc_g[0, dv) = sum_j w_g[j] v_j over keys j < end with w_g[j] != 0 for G query heads (each V row
// read once for all G, stored as E), each lane adding w_g[j] * v_j[i] in key order from 0 (separate multiply and
// add): the exact path's sums, bit for bit. dv % 8 == 0.
template <int G, class E>
void weighted_rows_exact(const float* const* w, int64_t end, const Tensor& v, int64_t kv, int64_t dv,
                         float* const* acc) {
  constexpr int64_t kVecs = kAccVecs / G;
  for (int64_t i0 = 0; i0 < dv; i0 += kVecs * 8) {
    const int64_t nv = std::min(kVecs, (dv - i0) / 8);
    __m256 a[G][kVecs];
    for (int g = 0; g < G; ++g)
      for (int64_t u = 0; u < kVecs; ++u) a[g][u] = _mm256_setzero_ps();
    for (int64_t j = 0; j < end; ++j) {
      const E* vr = reinterpret_cast<const E*>(elem_ptr(v, 0, kv, j, 0)) + i0;
      for (int g = 0; g < G; ++g) {
        if (w[g][j] == 0.0f) continue;  // masked (or underflowed) keys add nothing
        const __m256 wj = _mm256_set1_ps(w[g][j]);
        for (int64_t u = 0; u < nv; ++u) a[g][u] = _mm256_add_ps(a[g][u], _mm256_mul_ps(wj, load8(vr + u * 8)));
      }
    }
    for (int g = 0; g < G; ++g)
      for (int64_t u = 0; u < nv; ++u) _mm256_storeu_ps(acc[g] + i0 + u * 8, a[g][u]);
  }
}

// The EXACT path over dense rows stored as E for G query heads h0 .. h0+G-1 of one kv head and token t.
template <int G, class E>
void attend_exact(const Tensor& dst, const SoftmaxParams& p, int64_t h0, int64_t t, int64_t kv, float* w_all,
                  float* acc_all) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const int64_t dk = q.ne[0], n_kv = k.ne[2], dv = v.ne[0];
  const int64_t last = attn_row_end(dst, t) - 1;
  const float* qs[G];
  float *ws[G], *accs[G];
  for (int g = 0; g < G; ++g) {
    qs[g] = reinterpret_cast<const float*>(elem_ptr(q, 0, h0 + g, t, 0));
    ws[g] = w_all + g * n_kv;
    accs[g] = acc_all + g * dv;
  }
  scores_exact<G, E>(qs, k, kv, std::clamp<int64_t>(last + 1, 0, n_kv), dk, ws);
  int64_t end = 0;
  for (int g = 0; g < G; ++g) {
    end = masked_scores(ws[g], n_kv, p.scale, dst.src[3], t, last);
    softmax_row(ws[g], end, n_kv);
  }
  weighted_rows_exact<G, E>(ws, end, v, kv, dv, accs);
  for (int g = 0; g < G; ++g) store_row(dst, h0 + g, t, 0, accs[g]);
}

// EXACT FLASH_ATTN over dense rows stored as E (K and V alike): query heads in pairs that share a
// kv head (GQA), so a long KV span is read once per pair rather than once per head.
template <class E>
void flash_attn_exact_vec(Tensor& dst) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  const int64_t dk = q.ne[0], n_head = q.ne[1], n_q = q.ne[2], n_kv = k.ne[2], dv = v.ne[0];
  const int64_t group = n_head / k.ne[1];
  const int64_t per = group % 2 == 0 ? 2 : 1;  // heads per unit
  const int64_t units = n_head / per * n_q;
  parallel_for(units, n_head * n_q * n_kv * (dk + dv) >= kParallelMinMacs, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> w(static_cast<size_t>(per * n_kv)), acc(static_cast<size_t>(per * dv));
    for (int64_t u = r_begin; u < r_end; ++u) {
      const int64_t h0 = u % (n_head / per) * per, t = u / (n_head / per);
      if (per == 2) {
        attend_exact<2, E>(dst, p, h0, t, h0 / group, w.data(), acc.data());
      } else {
        attend_exact<1, E>(dst, p, h0, t, h0 / group, w.data(), acc.data());
      }
    }
  });
}

// The EXACT vector path's K/V type: dense F32 q, and K and V both dense F32 or both dense F16 (an
// F16 KV cache), with Dk and Dv multiples of 8; none otherwise (the scalar loop runs).
std::optional<DType> exact_vec_kv_type(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.type != DType::F32 || q.nb[0] != static_cast<int64_t>(sizeof(float))) return std::nullopt;
  if (k.type != v.type || (k.type != DType::F32 && k.type != DType::F16)) return std::nullopt;
  const size_t es = dtype_traits(k.type).block_bytes;
  if (k.nb[0] != es || v.nb[0] != es || q.ne[0] % 8 != 0 || v.ne[0] % 8 != 0) return std::nullopt;
  return k.type;
}
#endif

}  // namespace

// Rows of x [n_kv, n_q, H, B]; mask (optional) F32 [n_kv, n_q] shared by all heads and batches.
void softmax(Tensor& dst) {
  GL_ASSERT(dst.op == Op::SOFTMAX, "softmax: not a SOFTMAX node");
  const Tensor& a = *dst.src[0];
  const Tensor* mask = dst.src[1];
  GL_ASSERT(same_shape(a, dst), "softmax: dst must match src");
  GL_ASSERT(!mask || (mask->type == DType::F32 && mask->ne[0] == a.ne[0] && mask->ne[1] == a.ne[1]),
            "softmax: mask must be F32 [n_kv, n_q]");
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  const int64_t n_kv = a.ne[0];
  const int64_t n_q = a.ne[1];
  const int64_t rows = nrows(dst);
  const bool fast = is_f32_rows(dst);
  parallel_for(rows, rows * n_kv >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> scratch(fast ? 0 : n_kv);
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, i1, i2, i3);
      float* w = fast ? reinterpret_cast<float*>(elem_ptr(dst, 0, i1, i2, i3)) : scratch.data();
      // The whole row is read before any write; when dst is src[0] itself there is nothing to load.
      if (static_cast<const void*>(w) != elem_ptr(a, 0, i1, i2, i3)) {
        load_row(a, i1, i2, i3, w);
      } else {
        GL_ASSERT(is_f32_rows(a), "softmax: dst aliases a source with another layout");
      }
      const int64_t last = p.causal ? i1 + (n_kv - n_q) : n_kv - 1;
      softmax_row(w, masked_scores(w, n_kv, p.scale, mask, i1, last), n_kv);
      if (!fast) store_row(dst, i1, i2, i3, w);
    }
  });
}

// q [Dk, H, T], k [Dk, Hkv, N], v [Dv, Hkv, N], mask (optional) F32 [N, T] -> [Dv, H, T]. One
// (token, head) row at a time, in the unfused graph's order: float dot products, the SOFTMAX row
// (float exponentials, double sum), then a float weighted sum of v rows in key order.
void flash_attn(Tensor& dst, Precision precision) {
  GL_ASSERT(dst.op == Op::FLASH_ATTN, "flash_attn: not a FLASH_ATTN node");
  const Tensor& q = *dst.src[0];
  const Tensor& k = *dst.src[1];
  const Tensor& v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  const int64_t dk = q.ne[0], n_head = q.ne[1], n_q = q.ne[2], n_kv = k.ne[2], dv = v.ne[0];
  const int64_t group = n_head / k.ne[1];
  const int64_t rows = n_head * n_q;
  if (precision == Precision::FAST && flash_attn_fast_fits(dst)) return flash_attn_fast(dst);
#if defined(__AVX2__)
  // EXACT over dense F32 or F16 rows: the same float operations in the same order, 8 lanes at a time.
  const std::optional<DType> kv_type = exact_vec_kv_type(q, k, v);
  if (kv_type == DType::F32) return flash_attn_exact_vec<float>(dst);
#if defined(__F16C__)
  if (kv_type == DType::F16) return flash_attn_exact_vec<fp16_t>(dst);
#endif
#endif
  parallel_for(rows, rows * n_kv * (dk + dv) >= kParallelMinMacs, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> qr(static_cast<size_t>(dk)), kr(static_cast<size_t>(dk)), vr(static_cast<size_t>(dv));
    std::vector<float> w(static_cast<size_t>(n_kv)), acc(static_cast<size_t>(dv));
    for (int64_t r = r_begin; r < r_end; ++r) {
      const int64_t h = r % n_head, t = r / n_head, kv = h / group;
      const int64_t last = attn_row_end(dst, t) - 1;
      load_row(q, h, t, 0, qr.data());
      for (int64_t j = 0; j < n_kv && j <= last; ++j) {
        load_row(k, kv, j, 0, kr.data());
        float dot = 0.0f;
        for (int64_t i = 0; i < dk; ++i) dot += qr[i] * kr[i];
        w[j] = dot;
      }
      const int64_t end = masked_scores(w.data(), n_kv, p.scale, mask, t, last);
      softmax_row(w.data(), end, n_kv);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < end; ++j) {
        if (w[j] == 0.0f) continue;  // masked (or underflowed) keys add nothing
        load_row(v, kv, j, 0, vr.data());
        for (int64_t i = 0; i < dv; ++i) acc[i] += w[j] * vr[i];
      }
      store_row(dst, h, t, 0, acc.data());
    }
  });
}

// x [D, H, T], pos I32 [T]: theta_i = pos * freq_scale * freq_base^(-2i/n_dims), i < n_dims/2.
void rope(Tensor& dst) {
  GL_ASSERT(dst.op == Op::ROPE, "rope: not a ROPE node");
  const Tensor& x = *dst.src[0];
  const Tensor& pos = *dst.src[1];
  const RopeParams p = dst.p<RopeParams>();
  GL_ASSERT(same_shape(x, dst) && x.ne[3] == 1, "rope: dst must match x [D, H, T]");
  GL_ASSERT(pos.type == DType::I32 && nelements(pos) == x.ne[2], "rope: pos must be I32 with one entry per token");
  GL_ASSERT(p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= x.ne[0], "rope: n_dims must be even and <= D");
  const int32_t half = p.n_dims / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int32_t i = 0; i < half; ++i)
    inv_freq[i] = std::pow(static_cast<double>(p.freq_base), -2.0 * i / static_cast<double>(p.n_dims));
  const int64_t rows = nrows(dst);
  parallel_for(rows, rows * x.ne[0] >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> row(static_cast<size_t>(x.ne[0]));
    std::vector<double> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    int64_t cached_t = -1;  // rows of one token are consecutive: reuse its cos/sin
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t h, t, i3;
      unravel_row(dst, r, h, t, i3);
      if (t != cached_t) {
        const double pt = static_cast<double>(position(pos, t)) * static_cast<double>(p.freq_scale);
        for (int32_t i = 0; i < half; ++i) {
          cs[i] = std::cos(pt * inv_freq[i]);
          sn[i] = std::sin(pt * inv_freq[i]);
        }
        cached_t = t;
      }
      load_row(x, h, t, i3, row.data());
      rope_row(row.data(), cs.data(), sn.data(), p.n_dims, p.mode);
      store_row(dst, h, t, i3, row.data());
    }
  });
}

}  // namespace gl::cpu
