// loader.cpp - binds Qwen3.5 GGUF tensors to weight tensors, checking names, shapes and dtypes.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {
namespace {

using Shape = std::array<int64_t, kMaxDims>;

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

// The weight tensor the layout entry w binds to.
Tensor*& slot(Model& m, const WeightSpec& w) {
  if (w.block < 0)
    return w.id == WeightId::TOKEN_EMBD ? m.tok_embd : w.id == WeightId::OUTPUT ? m.output : m.output_norm;
  LayerWeights& l = m.layers[static_cast<size_t>(w.block)];
  switch (w.id) {
    case WeightId::TOKEN_EMBD:
    case WeightId::OUTPUT_NORM:
    case WeightId::OUTPUT: break;
    case WeightId::ATTN_NORM: return l.attn_norm;
    case WeightId::POST_ATTN_NORM: return l.post_attention_norm;
    case WeightId::ATTN_Q: return l.wq;
    case WeightId::ATTN_K: return l.wk;
    case WeightId::ATTN_V: return l.wv;
    case WeightId::ATTN_OUTPUT: return l.wo;
    case WeightId::ATTN_Q_NORM: return l.q_norm;
    case WeightId::ATTN_K_NORM: return l.k_norm;
    case WeightId::SSM_QKV: return l.wqkv;
    case WeightId::SSM_GATE: return l.wgate;
    case WeightId::SSM_CONV1D: return l.ssm_conv1d;
    case WeightId::SSM_DT: return l.ssm_dt;
    case WeightId::SSM_A: return l.ssm_a;
    case WeightId::SSM_BETA: return l.ssm_beta;
    case WeightId::SSM_ALPHA: return l.ssm_alpha;
    case WeightId::SSM_NORM: return l.ssm_norm;
    case WeightId::SSM_OUT: return l.ssm_out;
    case WeightId::FFN_GATE: return l.ffn_gate;
    case WeightId::FFN_UP: return l.ffn_up;
    case WeightId::FFN_DOWN: return l.ffn_down;
    case WeightId::FFN_GATE_INP: return l.ffn_gate_inp;
    case WeightId::FFN_GATE_EXPS: return l.ffn_gate_exps;
    case WeightId::FFN_UP_EXPS: return l.ffn_up_exps;
    case WeightId::FFN_DOWN_EXPS: return l.ffn_down_exps;
    case WeightId::FFN_GATE_INP_SHEXP: return l.ffn_gate_inp_shexp;
    case WeightId::FFN_GATE_SHEXP: return l.ffn_gate_shexp;
    case WeightId::FFN_UP_SHEXP: return l.ffn_up_shexp;
    case WeightId::FFN_DOWN_SHEXP: return l.ffn_down_shexp;
    case WeightId::NEXTN_EH_PROJ: return l.eh_proj;
    case WeightId::NEXTN_ENORM: return l.enorm;
    case WeightId::NEXTN_HNORM: return l.hnorm;
    case WeightId::NEXTN_SHARED_HEAD_NORM: return l.shared_head_norm;
  }
  GL_ASSERT(false, "slot: a global weight with a block index");
  return m.tok_embd;
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
  layers.resize(static_cast<size_t>(hp_.n_block()));
  for (const WeightSpec& w : weight_layout(hp_)) {
    Shape expect{1, 1, 1, 1};
    std::copy(w.ne.begin(), w.ne.end(), expect.begin());
    Result<Tensor*> t = b.get(w.name, expect, w.required);
    if (!t) return Error(t.error());
    slot(*this, w) = *t;
  }
  if (hp_.tied_embeddings) output = tok_embd;
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

Precision Model::default_precision() const {
  uint64_t quantized = 0, total = 0;
  for (const GgufTensorInfo& t : file_.tensors()) {
    total += t.nbytes;
    const std::optional<DType> d = t.dtype();
    if (d && dtype_traits(*d).is_quant) quantized += t.nbytes;
  }
  return 2 * quantized > total ? Precision::FAST : Precision::EXACT;
}

Result<std::unique_ptr<Model>> Model::load_meta(const std::string& path) {
  Result<GgufFile> f = GgufFile::open(path);
  if (!f) return Error(f.error());
  return open(std::move(*f), nullptr, nullptr, {});
}

}  // namespace gl::qwen35
