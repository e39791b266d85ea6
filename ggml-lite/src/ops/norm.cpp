// norm.cpp - builders for row norms.
#include "builder.h"

namespace gl {

Tensor* rms_norm(Context& ctx, Tensor* a, float eps) {
  detail::require_float(Op::RMS_NORM, a, "a");
  GL_OP_CHECK(eps >= 0.0f, Op::RMS_NORM, "eps {} is negative", eps);
  return ctx.new_op(Op::RMS_NORM, a->type, a->ne, NormParams{eps}, {a});
}

Tensor* l2_norm(Context& ctx, Tensor* a, float eps) {
  detail::require_float(Op::L2_NORM, a, "a");
  GL_OP_CHECK(eps >= 0.0f, Op::L2_NORM, "eps {} is negative", eps);
  return ctx.new_op(Op::L2_NORM, a->type, a->ne, NormParams{eps}, {a});
}

}  // namespace gl
