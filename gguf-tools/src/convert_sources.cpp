// convert_sources.cpp - safetensors rows -> GGUF tensors with llama.cpp's qwen35 transforms.
//
// Every transform is a row gather (which source row feeds output row r), an optional column
// permutation and an elementwise op (+1, -exp). Rows are read from the mapped shards one chunk
// at a time, so only the writer's chunk buffer is ever in memory.
#include "convert_sources.h"

#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util.h"

namespace gl::tools {

Result<SourceSet> SourceSet::open(const SafetensorsModel& model) {
  SourceSet s;
  s.model_ = &model;
  for (const char* p : {"model.language_model.", "model."}) {
    if (model.find(std::string(p) + "embed_tokens.weight")) {
      s.prefix_ = p;
      return s;
    }
  }
  return Error("no embed_tokens.weight under model.language_model. or model. (not a Qwen3.5 text checkpoint?)");
}

std::string SourceSet::full_name(const std::string& hf, bool top_level) const { return top_level ? hf : prefix_ + hf; }

const SafetensorsTensor* SourceSet::find(const std::string& hf, bool top_level) const {
  if (const SafetensorsTensor* t = model_->find(full_name(hf, top_level))) return t;
  // Some exports keep the MTP head under model.mtp.* (llama.cpp accepts both).
  if (top_level && starts_with(hf, "mtp.")) return model_->find("model." + hf);
  return nullptr;
}

std::vector<std::string> SourceSet::unused() const {
  std::vector<std::string> out;
  for (const SafetensorsTensor& t : model_->tensors()) {
    if (used_.count(t.name) || ignored_.count(t.name)) continue;
    bool skip = false;
    for (const std::string& p : ignored_prefixes_) skip = skip || starts_with(t.name, p);
    if (!skip) out.push_back(t.name);
  }
  return out;
}

namespace {

enum class Op : uint8_t { NONE, ADD_ONE, NEG_EXP };

struct Gather {
  std::vector<const SafetensorsTensor*> srcs;
  std::vector<DType> types;
  int64_t row_len = 0;                                        // elements per row (source = output)
  std::function<std::pair<size_t, int64_t>(int64_t)> row_of;  // output row -> (source, row); empty: identity
  std::vector<int64_t> col_perm;                              // output col c <- source col col_perm[c]
  Op op = Op::NONE;
};

void apply_op(Op op, float* x, int64_t n) {
  switch (op) {
    case Op::NONE: return;
    case Op::ADD_ONE:
      for (int64_t i = 0; i < n; ++i) x[i] += 1.0f;
      return;
    case Op::NEG_EXP:
      for (int64_t i = 0; i < n; ++i) x[i] = -std::exp(x[i]);
      return;
  }
}

RowFiller make_filler(std::shared_ptr<const Gather> g) {
  return [g](int64_t r0, int64_t n, float* out) {
    std::vector<float> tmp(g->col_perm.empty() ? 0 : static_cast<size_t>(g->row_len));
    for (int64_t k = 0; k < n; ++k) {
      const auto [si, sr] = g->row_of ? g->row_of(r0 + k) : std::pair<size_t, int64_t>{0, r0 + k};
      const DType type = g->types[si];
      const uint8_t* p = g->srcs[si]->data.data() + row_bytes(type, g->row_len) * static_cast<size_t>(sr);
      float* o = out + k * g->row_len;
      if (g->col_perm.empty()) {
        to_float(type, p, o, g->row_len);
      } else {
        to_float(type, p, tmp.data(), g->row_len);
        for (int64_t c = 0; c < g->row_len; ++c) o[c] = tmp[static_cast<size_t>(g->col_perm[static_cast<size_t>(c)])];
      }
      apply_op(g->op, o, g->row_len);
    }
  };
}

// Checks shape and dtype and appends the tensor to the gather.
Status add_source(const SafetensorsTensor& t, const std::vector<int64_t>& want, Gather& g, SourceSet& src) {
  if (t.shape != want)
    return Error(fmt::format("tensor '{}': expected shape [{}], got [{}]", t.name, fmt::join(want, ", "),
                             fmt::join(t.shape, ", ")));
  Result<DType> dt = t.dtype();
  if (!dt) return Error(dt.error());
  g.srcs.push_back(&t);
  g.types.push_back(*dt);
  src.mark_used(t.name);
  return {};
}

Error missing(const TensorSpec& s, const std::string& full) {
  return Error(fmt::format("missing tensor '{}' (needed for {})", full, s.name));
}

// The PyTorch shape of the source of a single-tensor spec.
std::vector<int64_t> source_shape(const TensorSpec& s, const Hparams& d) {
  switch (s.xform) {
    case Xform::V_HEADS:
    case Xform::V_HEADS_A: return {d.n_v_heads};
    case Xform::V_CONV: return {d.conv_dim(), 1, d.conv_kernel};
    case Xform::COPY:
    case Xform::ADD_ONE:
    case Xform::V_QKV_ROWS:
    case Xform::V_ROWS:
    case Xform::V_HEAD_ROWS:
    case Xform::V_COLS:
    case Xform::EXPERTS_GATE:
    case Xform::EXPERTS_UP:
    case Xform::EXPERTS_DOWN: break;
  }
  return {s.ne.rbegin(), s.ne.rend()};
}

// Row maps and column permutations of the value-head transforms.
void set_transform(const TensorSpec& s, const Hparams& d, Gather& g) {
  const int64_t Hk = d.n_k_heads, Hv = d.n_v_heads, Dv = d.d_v, qk = 2 * (d.n_k_heads * d.d_k);
  // q and k channels keep their order; the V channels move head by head.
  auto channel = [=](int64_t r) -> std::pair<size_t, int64_t> {
    if (r < qk) return {0, r};
    const int64_t v = r - qk;
    return {0, qk + grouped_head_for_tiled(v / Dv, Hk, Hv) * Dv + v % Dv};
  };
  auto head_rows = [=](int64_t r) -> std::pair<size_t, int64_t> {
    return {0, grouped_head_for_tiled(r / Dv, Hk, Hv) * Dv + r % Dv};
  };
  auto heads = [=](int64_t r) -> std::pair<size_t, int64_t> { return {0, grouped_head_for_tiled(r, Hk, Hv)}; };
  g.row_len = s.ne[0];
  switch (s.xform) {
    case Xform::ADD_ONE: g.op = Op::ADD_ONE; return;
    case Xform::V_QKV_ROWS: g.row_of = channel; return;
    case Xform::V_CONV:
      g.row_of = channel;
      g.row_len = d.conv_kernel;
      return;
    case Xform::V_ROWS: g.row_of = head_rows; return;
    case Xform::V_HEAD_ROWS: g.row_of = heads; return;
    case Xform::V_HEADS:
      g.row_of = heads;
      g.row_len = 1;
      return;
    case Xform::V_HEADS_A:
      g.row_of = heads;
      g.row_len = 1;
      g.op = Op::NEG_EXP;
      return;
    case Xform::V_COLS:
      g.col_perm.resize(static_cast<size_t>(Hv * Dv));
      for (int64_t c = 0; c < Hv * Dv; ++c)
        g.col_perm[static_cast<size_t>(c)] = grouped_head_for_tiled(c / Dv, Hk, Hv) * Dv + c % Dv;
      return;
    case Xform::COPY:
    case Xform::EXPERTS_GATE:
    case Xform::EXPERTS_UP:
    case Xform::EXPERTS_DOWN: return;
  }
}

Status bind_single(const TensorSpec& s, const Hparams& d, SourceSet& src, Gather& g) {
  const SafetensorsTensor* t = src.find(s.hf, s.hf_top_level);
  if (!t) return missing(s, src.full_name(s.hf, s.hf_top_level));
  GL_TRY(add_source(*t, source_shape(s, d), g, src));
  set_transform(s, d, g);
  return {};
}

const SafetensorsTensor* find_fused(const SourceSet& src, const TensorSpec& s, const std::string& leaf) {
  const std::string base = s.hf + "." + leaf;
  if (const SafetensorsTensor* t = src.find(base, s.hf_top_level)) return t;
  return src.find(base + ".weight", s.hf_top_level);
}

// Experts: fused gate_up_proj [E, 2Fe, H] / down_proj [E, H, Fe], or per-expert 2-D tensors
// experts.{e}.{gate,up,down}_proj.weight stacked along the expert axis.
Status bind_experts(const TensorSpec& s, const Hparams& d, SourceSet& src, Gather& g) {
  const int64_t E = d.n_expert, Fe = d.n_ff_exp, H = d.n_embd;
  const bool down = s.xform == Xform::EXPERTS_DOWN, up = s.xform == Xform::EXPERTS_UP;
  g.row_len = down ? Fe : H;
  if (const SafetensorsTensor* t = find_fused(src, s, down ? "down_proj" : "gate_up_proj")) {
    GL_TRY(add_source(*t, down ? std::vector<int64_t>{E, H, Fe} : std::vector<int64_t>{E, 2 * Fe, H}, g, src));
    // gate is rows [0, Fe) of each expert's [2Fe, H] block, up rows [Fe, 2Fe).
    if (!down)
      g.row_of = [=](int64_t r) -> std::pair<size_t, int64_t> { return {0, r / Fe * 2 * Fe + (up ? Fe : 0) + r % Fe}; };
    return {};
  }
  const std::string proj = down ? "down_proj" : up ? "up_proj" : "gate_proj";
  const std::string first = fmt::format("{}.0.{}.weight", s.hf, proj);
  if (!src.find(first, s.hf_top_level))
    return Error(fmt::format("missing tensor '{}.{}' or per-expert '{}' (needed for {})",
                             src.full_name(s.hf, s.hf_top_level), down ? "down_proj" : "gate_up_proj",
                             src.full_name(first, s.hf_top_level), s.name));
  for (int64_t e = 0; e < E; ++e) {
    const std::string name = fmt::format("{}.{}.{}.weight", s.hf, e, proj);
    const SafetensorsTensor* t = src.find(name, s.hf_top_level);
    if (!t) return missing(s, src.full_name(name, s.hf_top_level));
    GL_TRY(add_source(*t, down ? std::vector<int64_t>{H, Fe} : std::vector<int64_t>{Fe, H}, g, src));
  }
  const int64_t rows = down ? H : Fe;
  g.row_of = [=](int64_t r) -> std::pair<size_t, int64_t> { return {static_cast<size_t>(r / rows), r % rows}; };
  return {};
}

}  // namespace

Result<OutTensor> bind_source(const TensorSpec& s, const Hparams& d, DType type, SourceSet& src) {
  auto g = std::make_shared<Gather>();
  const bool experts = s.xform == Xform::EXPERTS_GATE || s.xform == Xform::EXPERTS_UP || s.xform == Xform::EXPERTS_DOWN;
  Status st = experts ? bind_experts(s, d, src, *g) : bind_single(s, d, src, *g);
  if (!st) return Error(st.error());
  return OutTensor{s.name, s.ne, type, g->row_len, make_filler(g)};
}

}  // namespace gl::tools
