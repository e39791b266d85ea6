// ops.h - the op enum, typed params, and the builders that record ops.
//
//   gl::Context ctx;
//   gl::Tensor* x = ctx.new_tensor(gl::DType::F32, {64, 8}, "x");
//   gl::Tensor* w = ctx.new_tensor(gl::DType::F32, {64}, "w");
//   gl::Tensor* y = gl::mul(ctx, gl::rms_norm(ctx, x, 1e-6f), w);  // nothing computed yet
//
// Builders validate shapes and dtypes and abort on violations with a message
// naming the op ("[mul_mat] ..."): shapes reaching a builder come from code, not
// from users; the loader checks untrusted shapes before building.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <variant>

#include "ggml-lite/dtype.h"

namespace gl {

struct Tensor;
class Context;

struct NoParams {
  bool operator==(const NoParams&) const = default;
};
struct ScaleParams {
  float scale = 1.0f;
  float bias = 0.0f;
  bool operator==(const ScaleParams&) const = default;
};
struct NormParams {
  float eps = 1e-6f;
  bool operator==(const NormParams&) const = default;
};
struct SoftmaxParams {
  float scale = 1.0f;
  bool causal = false;
  bool operator==(const SoftmaxParams&) const = default;
};
enum class RopeMode : uint8_t { NORMAL, NEOX };
struct RopeParams {
  int32_t n_dims = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  RopeMode mode = RopeMode::NEOX;
  bool operator==(const RopeParams&) const = default;
};
struct ConcatParams {
  int32_t dim = 0;
  bool operator==(const ConcatParams&) const = default;
};
struct ViewParams {
  size_t offset = 0;  // bytes from the start of the source
  bool operator==(const ViewParams&) const = default;
};
struct PermuteParams {
  std::array<int32_t, 4> axes{0, 1, 2, 3};  // source dim i goes to result dim axes[i]
  bool operator==(const PermuteParams&) const = default;
};
struct TopKParams {
  int32_t k = 1;
  bool operator==(const TopKParams&) const = default;
};
struct GdrParams {
  int32_t n_states = 1;  // states emitted after each of the last n_states tokens (>= 1)
  bool operator==(const GdrParams&) const = default;
};

enum class Op : uint8_t {
#define X(name, min_srcs, max_srcs, params, inplace) name,
#include "ggml-lite/ops.def"
#undef X
};

using OpParams = std::variant<NoParams, ScaleParams, NormParams, SoftmaxParams, RopeParams, ConcatParams, ViewParams,
                              PermuteParams, TopKParams, GdrParams>;

struct OpInfo {
  std::string_view name;  // lower case, e.g. "mul_mat"
  int min_srcs;
  int max_srcs;
  bool inplace_safe;
};

inline constexpr int kOpCount = 0
#define X(name, min_srcs, max_srcs, params, inplace) +1
#include "ggml-lite/ops.def"
#undef X
    ;

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
// View ops share memory with their source and compute nothing.
bool is_view_op(Op op);

// ---- builders ----------------------------------------------------------------

Tensor* get_rows(Context& ctx, Tensor* a, Tensor* ids);
Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* src, Tensor* ids);

Tensor* add(Context& ctx, Tensor* a, Tensor* b);
Tensor* sub(Context& ctx, Tensor* a, Tensor* b);
Tensor* mul(Context& ctx, Tensor* a, Tensor* b);
Tensor* div(Context& ctx, Tensor* a, Tensor* b);
Tensor* scale(Context& ctx, Tensor* a, float s, float bias = 0.0f);

Tensor* rms_norm(Context& ctx, Tensor* a, float eps);
Tensor* l2_norm(Context& ctx, Tensor* a, float eps);

Tensor* mul_mat(Context& ctx, Tensor* w, Tensor* x);
Tensor* mul_mat_id(Context& ctx, Tensor* experts, Tensor* x, Tensor* ids);

// mask (optional): F32 [n_kv, n_q] added to every head's scores.
Tensor* softmax(Context& ctx, Tensor* a, Tensor* mask, float scale, bool causal);
// Fused attention (FLASH_ATTN in ops.def): q [Dk, H, T] against the span k [Dk, Hkv, N],
// v [Dv, Hkv, N] (a KV cache view); mask (optional) F32 [N, T] is added to every head's scores.
Tensor* flash_attn(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale, bool causal = false);
Tensor* rope(Context& ctx, Tensor* x, Tensor* pos, int n_dims, float freq_base, RopeMode mode, float freq_scale = 1.0f);

Tensor* silu(Context& ctx, Tensor* a);
Tensor* sigmoid(Context& ctx, Tensor* a);
Tensor* softplus(Context& ctx, Tensor* a);
Tensor* exp(Context& ctx, Tensor* a);
Tensor* swiglu(Context& ctx, Tensor* gate, Tensor* up);

Tensor* concat(Context& ctx, Tensor* a, Tensor* b, int dim);

// Views. ne/nb given in elements/bytes; offset in bytes.
Tensor* view(Context& ctx, Tensor* a, std::initializer_list<int64_t> ne, std::initializer_list<size_t> nb,
             size_t offset);
Tensor* view_1d(Context& ctx, Tensor* a, int64_t ne0, size_t offset);
Tensor* view_2d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
Tensor* view_3d(Context& ctx, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset);
Tensor* reshape(Context& ctx, Tensor* a, std::initializer_list<int64_t> ne);  // a must be contiguous
Tensor* permute(Context& ctx, Tensor* a, int ax0, int ax1, int ax2, int ax3);
Tensor* transpose(Context& ctx, Tensor* a);  // swaps dims 0 and 1

Tensor* cont(Context& ctx, Tensor* a);
Tensor* cast(Context& ctx, Tensor* a, DType type);  // CONT into another dtype
Tensor* cpy(Context& ctx, Tensor* src, Tensor* dst);

Tensor* argmax(Context& ctx, Tensor* a);
Tensor* top_k(Context& ctx, Tensor* a, int k);
Tensor* sum_rows(Context& ctx, Tensor* a);

Tensor* ssm_conv(Context& ctx, Tensor* xs, Tensor* w);

struct GdrResult {
  Tensor* node;    // the op's flat output
  Tensor* out;     // view: F32 [Dv, Hv, T]
  Tensor* states;  // view: F32 [Dv, Dk, Hv, n_states]; states->... last is the final state
};
GdrResult gated_delta_rule(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* g, Tensor* beta, Tensor* state,
                           int n_states);

}  // namespace gl
