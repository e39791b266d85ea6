// loader.cpp - binds Qwen3.5 GGUF tensors to weight tensors, checking names, shapes and dtypes.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {
namespace {

using Shape = std::array<int64_t, kMaxDims>;

Shape dims(std::initializer_list<int64_t> ne) {
  Shape s{1, 1, 1, 1};
  std::copy(ne.begin(), ne.end(), s.begin());
  return s;
}

std::string shape_text(const Shape& s) { return fmt::format("[{}, {}, {}, {}]", s[0], s[1], s[2], s[3]); }

// Creates the weight tensor `name` with the expected shape, after checking the GGUF entry.
class Binder {
 public:
  Binder(const GgufFile& f, Context& ctx) : f_(f), ctx_(ctx) {}

  Result<Tensor*> get(const std::string& name, const Shape& expect, bool required = true) {
    const GgufTensorInfo* info = f_.find_tensor(name);
    if (!info) {
      if (!required) return static_cast<Tensor*>(nullptr);
      return Error(fmt::format("{}: tensor '{}' is missing", f_.name(), name));
    }
    if (info->ne != expect)
      return Error(fmt::format("{}: tensor '{}' has shape {}, expected {}", f_.name(), name, shape_text(info->ne),
                               shape_text(expect)));
    Result<DType> dt = f_.tensor_dtype(*info);
    if (!dt) return Error(dt.error());
    Tensor* t = ctx_.new_tensor(*dt, expect, name);
    t->flags |= TENSOR_WEIGHT;
    infos_.push_back({t, info});
    return t;
  }
  const std::vector<std::pair<Tensor*, const GgufTensorInfo*>>& bound() const { return infos_; }

 private:
  const GgufFile& f_;
  Context& ctx_;
  std::vector<std::pair<Tensor*, const GgufTensorInfo*>> infos_;
};

#define GL_BIND(dst, ...)              \
  do {                                 \
    auto r_ = b.get(__VA_ARGS__);      \
    if (!r_) return Error(r_.error()); \
    dst = *r_;                         \
  } while (0)

Status bind_attention(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& l) {
  const int64_t hd = hp.head_dim, e = hp.n_embd;
  GL_BIND(l.wq, p + "attn_q.weight", dims({e, 2 * hd * hp.n_head}));
  GL_BIND(l.wk, p + "attn_k.weight", dims({e, hd * hp.n_head_kv}));
  GL_BIND(l.wv, p + "attn_v.weight", dims({e, hd * hp.n_head_kv}));
  GL_BIND(l.wo, p + "attn_output.weight", dims({hd * hp.n_head, e}));
  GL_BIND(l.q_norm, p + "attn_q_norm.weight", dims({hd}));
  GL_BIND(l.k_norm, p + "attn_k_norm.weight", dims({hd}));
  return {};
}

Status bind_gdn(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& l) {
  const int64_t e = hp.n_embd, hv = hp.n_v_heads, inner = hp.n_v_heads * hp.d_v;
  GL_BIND(l.wqkv, p + "attn_qkv.weight", dims({e, hp.conv_dim()}));
  GL_BIND(l.wgate, p + "attn_gate.weight", dims({e, inner}));
  GL_BIND(l.ssm_conv1d, p + "ssm_conv1d.weight", dims({hp.conv_kernel, hp.conv_dim()}));
  GL_BIND(l.ssm_dt, p + "ssm_dt.bias", dims({hv}));
  GL_BIND(l.ssm_a, p + "ssm_a", dims({hv}));
  GL_BIND(l.ssm_beta, p + "ssm_beta.weight", dims({e, hv}));
  GL_BIND(l.ssm_alpha, p + "ssm_alpha.weight", dims({e, hv}));
  GL_BIND(l.ssm_norm, p + "ssm_norm.weight", dims({hp.d_v}));
  GL_BIND(l.ssm_out, p + "ssm_out.weight", dims({inner, e}));
  return {};
}

Status bind_ffn(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& l) {
  const int64_t e = hp.n_embd;
  if (hp.arch == Arch::DENSE) {
    GL_BIND(l.ffn_gate, p + "ffn_gate.weight", dims({e, hp.n_ff}));
    GL_BIND(l.ffn_up, p + "ffn_up.weight", dims({e, hp.n_ff}));
    GL_BIND(l.ffn_down, p + "ffn_down.weight", dims({hp.n_ff, e}));
    return {};
  }
  const int64_t fe = hp.n_ff_exp, ne = hp.n_expert;
  GL_BIND(l.ffn_gate_inp, p + "ffn_gate_inp.weight", dims({e, ne}));
  GL_BIND(l.ffn_gate_exps, p + "ffn_gate_exps.weight", dims({e, fe, ne}));
  GL_BIND(l.ffn_up_exps, p + "ffn_up_exps.weight", dims({e, fe, ne}));
  GL_BIND(l.ffn_down_exps, p + "ffn_down_exps.weight", dims({fe, e, ne}));
  if (hp.n_ff_shexp > 0) {
    GL_BIND(l.ffn_gate_inp_shexp, p + "ffn_gate_inp_shexp.weight", dims({e}));
    GL_BIND(l.ffn_gate_shexp, p + "ffn_gate_shexp.weight", dims({e, hp.n_ff_shexp}));
    GL_BIND(l.ffn_up_shexp, p + "ffn_up_shexp.weight", dims({e, hp.n_ff_shexp}));
    GL_BIND(l.ffn_down_shexp, p + "ffn_down_shexp.weight", dims({hp.n_ff_shexp, e}));
  }
  return {};
}

Status bind_nextn(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& l) {
  const int64_t e = hp.n_embd;
  GL_BIND(l.eh_proj, p + "nextn.eh_proj.weight", dims({2 * e, e}));
  GL_BIND(l.enorm, p + "nextn.enorm.weight", dims({e}));
  GL_BIND(l.hnorm, p + "nextn.hnorm.weight", dims({e}));
  GL_BIND(l.shared_head_norm, p + "nextn.shared_head_norm.weight", dims({e}), false);
  return {};
}

Status bind_layer(Binder& b, const Hparams& hp, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  GL_BIND(l.attn_norm, p + "attn_norm.weight", dims({hp.n_embd}));
  GL_BIND(l.post_attention_norm, p + "post_attention_norm.weight", dims({hp.n_embd}));
  if (hp.is_recurrent(il)) {
    GL_TRY(bind_gdn(b, hp, p, l));
  } else {
    GL_TRY(bind_attention(b, hp, p, l));
  }
  GL_TRY(bind_ffn(b, hp, p, l));
  if (il >= hp.n_layer) GL_TRY(bind_nextn(b, hp, p, l));
  return {};
}

// The file name, or for a layout built in memory its general.name.
std::string model_label(const GgufFile& f) {
  if (f.name() != GgufFile().name()) return f.name();
  Result<std::string> n = f.get<std::string>("general.name");
  return n ? fmt::format("{} (in memory)", *n) : f.name();
}

}  // namespace

Result<Model::Bound> Model::bind() {
  Binder b(file_, ctx_);
  const int64_t e = hp_.n_embd;
  auto emb = b.get("token_embd.weight", dims({e, hp_.n_vocab}));
  if (!emb) return Error(emb.error());
  tok_embd = *emb;
  auto onorm = b.get("output_norm.weight", dims({e}));
  if (!onorm) return Error(onorm.error());
  output_norm = *onorm;
  auto out = b.get("output.weight", dims({e, hp_.n_vocab}), false);
  if (!out) return Error(out.error());
  output = *out ? *out : tok_embd;
  layers.resize(static_cast<size_t>(hp_.n_layer + hp_.n_nextn));
  for (int il = 0; il < static_cast<int>(layers.size()); ++il) GL_TRY(bind_layer(b, hp_, il, layers[il]));
  return b.bound();
}

Status Model::place(const Bound& bound, Backend& backend, const TensorSource* src, const LoadProgress& progress) {
  if (backend.is_host() && !src) {  // use the mapped file in place
    for (auto [t, info] : bound) t->data = const_cast<uint8_t*>(info->data);
    return {};
  }
  const size_t align = backend.alignment();
  auto padded = [align](size_t n) { return (n + align - 1) / align * align; };
  size_t total = 0, largest = 0;
  uint64_t weight_bytes = 0;
  for (auto [t, info] : bound) {
    if (info->nbytes != nbytes(*t))
      return Error(fmt::format("{}: tensor '{}' has {} bytes, expected {}", model_label(file_), info->name,
                               info->nbytes, nbytes(*t)));
    total += padded(info->nbytes);
    weight_bytes += info->nbytes;
    largest = std::max<size_t>(largest, info->nbytes);
  }
  std::unique_ptr<Buffer> buf = backend.alloc_buffer(total, BufferUsage::WEIGHTS);
  if (!buf)
    return Error(fmt::format("{}: out of {} memory: weights need {:.2f} GiB on {}", model_label(file_),
                             backend.is_host() ? "host" : "device", static_cast<double>(total) / (1 << 30),
                             backend.name()));
  // Device backends: the source fills a host staging buffer, reused for every tensor.
  std::vector<uint8_t> staging(src && !backend.is_host() ? largest : 0);
  size_t off = 0;
  uint64_t done = 0;
  for (auto [t, info] : bound) {
    buf->bind(*t, off);
    off += padded(info->nbytes);
    if (backend.is_host()) {
      GL_TRY((*src)(*info, t->data));
    } else if (src) {
      GL_TRY((*src)(*info, staging.data()));
      backend.set_tensor(*t, staging.data(), 0, info->nbytes);
    } else {
      backend.set_tensor(*t, info->data, 0, info->nbytes);
    }
    done += info->nbytes;
    if (progress) progress(done, weight_bytes);
  }
  buffers_.push_back(std::move(buf));
  return {};
}

Result<std::unique_ptr<Model>> Model::open(GgufFile f, Backend* backend, const TensorSource* src,
                                           const LoadProgress& progress) {
  Result<Hparams> hp = Hparams::from_gguf(f);
  if (!hp) return Error(hp.error());
  auto m = std::make_unique<Model>();
  m->file_ = std::move(f);
  m->hp_ = *hp;
  Result<Bound> bound = m->bind();
  if (!bound) return Error(bound.error());
  if (backend) GL_TRY(m->place(*bound, *backend, src, progress));
  return m;
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, Backend& backend, const LoadProgress& progress) {
  Result<GgufFile> f = GgufFile::open(path);
  if (!f) return Error(f.error());
  return open(std::move(*f), &backend, nullptr, progress);
}

Result<std::unique_ptr<Model>> Model::load(GgufFile layout, const TensorSource& src, Backend& backend,
                                           const LoadProgress& progress) {
  if (!src) return Error(fmt::format("{}: no tensor source given", layout.name()));
  return open(std::move(layout), &backend, &src, progress);
}

Result<std::unique_ptr<Model>> Model::load_meta(const std::string& path) {
  Result<GgufFile> f = GgufFile::open(path);
  if (!f) return Error(f.error());
  return open(std::move(*f), nullptr, nullptr, {});
}

}  // namespace gl::qwen35
