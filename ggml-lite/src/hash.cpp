// hash.cpp - op parameters hashed field by field. A new params struct without an overload
// here is a compile error.
#include "ggml-lite/hash.h"

#include <variant>

namespace gl {
namespace {

void fields(Hasher&, const NoParams&) {}
void fields(Hasher& h, const ScaleParams& p) {
  h.value(p.scale);
  h.value(p.bias);
}
void fields(Hasher& h, const NormParams& p) { h.value(p.eps); }
void fields(Hasher& h, const SoftmaxParams& p) {
  h.value(p.scale);
  h.value(p.causal);
}
void fields(Hasher& h, const RopeParams& p) {
  h.value(p.n_dims);
  h.value(p.freq_base);
  h.value(p.freq_scale);
  h.value(p.mode);
}
void fields(Hasher& h, const ConcatParams& p) { h.value(p.dim); }
void fields(Hasher& h, const ViewParams& p) { h.value(p.offset); }
void fields(Hasher& h, const PermuteParams& p) {
  for (int32_t a : p.axes) h.value(a);
}
void fields(Hasher& h, const TopKParams& p) { h.value(p.k); }
void fields(Hasher& h, const GdrParams& p) { h.value(p.n_states); }

}  // namespace

void hash_params(Hasher& h, const OpParams& p) {
  h.value(static_cast<uint64_t>(p.index()));
  std::visit([&](const auto& q) { fields(h, q); }, p);
}

}  // namespace gl
