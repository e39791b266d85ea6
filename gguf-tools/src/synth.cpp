// synth.cpp - gguf-synth's presets and counter-based random weights; SynthModel gives the same bytes in memory.
#include "gguf-tools/synth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gguf-tools/quant_mix.h"
#include "gguf-tools/tokenizer_meta.h"
#include "util.h"

namespace gl::tools {
namespace {

// Qwen3.5 values shared by the real presets (qwen35-mtp-spec.md, perf-anchors.md section 2).
Hparams qwen35_base() {
  Hparams d;
  d.arch = qwen35::Arch::DENSE;
  d.n_nextn = 1;
  d.n_vocab = 248320;
  d.n_ctx_train = 262144;
  d.head_dim = 256;
  d.rope_dims = 64;  // 256 * partial_rotary_factor 0.25
  d.rope_base = 1e7f;
  d.rope_sections = {11, 11, 10, 0};
  d.eps = 1e-6f;
  d.full_attn_interval = 4;
  d.conv_kernel = 4;
  d.d_k = 128;
  d.d_v = 128;
  d.n_k_heads = 16;
  return d;
}

SynthPreset qwen35_0_8b() {
  Hparams d = qwen35_base();
  d.n_layer = 24, d.n_embd = 1024, d.n_ff = 3584, d.n_head = 8, d.n_head_kv = 2;
  d.n_v_heads = 16;
  d.tied_embeddings = true;
  return {"qwen35-0.8b", "Qwen3.5-0.8B: 24 layers, H 1024, FFN 3584, heads 8/2, GDN 16/16, tied embeddings", d};
}

SynthPreset qwen35_9b() {
  Hparams d = qwen35_base();
  d.n_layer = 32, d.n_embd = 4096, d.n_ff = 12288, d.n_head = 16, d.n_head_kv = 4;
  d.n_v_heads = 32;
  return {"qwen35-9b", "Qwen3.5-9B: 32 layers, H 4096, FFN 12288, heads 16/4, GDN 16/32", d};
}

SynthPreset qwen35_35b_a3b() {
  Hparams d = qwen35_base();
  d.arch = qwen35::Arch::MOE;
  d.n_layer = 40, d.n_embd = 2048, d.n_head = 16, d.n_head_kv = 2;
  d.n_v_heads = 32;
  d.n_expert = 256, d.n_expert_used = 8, d.n_ff_exp = 512, d.n_ff_shexp = 512;
  return {"qwen35-35b-a3b", "Qwen3.5-35B-A3B: 40 layers, H 2048, 256 experts top-8 (512) + shared 512, heads 16/2", d};
}

// The shapes of the tests/fixtures checkpoints: 3 GDN + 1 attention layer + MTP, Hk 2 / Hv 4.
Hparams tiny_base() {
  Hparams d;
  d.arch = qwen35::Arch::DENSE;
  d.n_layer = 4, d.n_nextn = 1, d.n_embd = 64, d.n_vocab = 512, d.n_ctx_train = 4096, d.n_ff = 128;
  d.n_head = 4, d.n_head_kv = 2, d.head_dim = 32, d.rope_dims = 8;
  d.rope_base = 1e7f;
  d.rope_sections = {2, 1, 1, 0};
  d.conv_kernel = 4, d.d_k = 16, d.d_v = 16, d.n_k_heads = 2, d.n_v_heads = 4;
  return d;
}

SynthPreset tiny() { return {"tiny", "tests: 4 + 1 MTP layers, H 64, vocab 512, GDN 2/4, dense FFN 128", tiny_base()}; }

SynthPreset tiny_moe() {
  Hparams d = tiny_base();
  d.arch = qwen35::Arch::MOE;
  d.n_ff = 0;
  d.n_expert = 8, d.n_expert_used = 2, d.n_ff_exp = 32, d.n_ff_shexp = 48;
  d.tied_embeddings = true;
  return {"tiny-moe", "tests: tiny with 8 experts top-2 (32) + shared 48, tied embeddings", d};
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}

// Element i of one tensor: u in [0, 1) from splitmix64(key + i), shaped by the role.
struct Generator {
  uint64_t key;
  Role role;
  float scale;  // std of the symmetric roles

  float at(int64_t i) const {
    const uint64_t x = splitmix64(key + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
    const float u = static_cast<float>(x >> 40) * 0x1.0p-24f;
    const float sym = 2.0f * u - 1.0f;  // uniform in [-1, 1), std 1/sqrt(3)
    switch (role) {
      case Role::EMBEDDING:
      case Role::WEIGHT:
      case Role::CONV1D: return sym * 1.7320508f * scale;
      case Role::NORM:
      case Role::SSM_NORM: return 1.0f + 0.1f * sym;
      case Role::SSM_A: return -std::exp(2.5f * u);
      case Role::SSM_DT: return 0.5f * sym;
    }
    return 0.0f;
  }
};

Generator generator(uint64_t seed, const TensorSpec& s) {
  float scale = 1.0f;
  switch (s.role) {
    case Role::EMBEDDING: scale = 0.02f; break;
    case Role::WEIGHT:
    case Role::CONV1D: scale = 1.0f / std::sqrt(static_cast<float>(s.ne[0])); break;
    case Role::NORM:
    case Role::SSM_NORM:
    case Role::SSM_A:
    case Role::SSM_DT: break;
  }
  return {splitmix64(seed ^ fnv1a(s.name)), s.role, scale};
}

OutTensor synth_tensor(uint64_t seed, const TensorSpec& s, DType type) {
  const Generator g = generator(seed, s);
  const int64_t ne0 = s.ne[0];
  RowFiller fill = [g, ne0](int64_t r0, int64_t n, float* out) {
    const int64_t base = r0 * ne0, count = n * ne0;
#pragma omp parallel for schedule(static) if (count >= (int64_t{1} << 16))
    for (int64_t i = 0; i < count; ++i) out[i] = g.at(base + i);
  };
  return {s.name, s.ne, output_type(s, type), ne0, std::move(fill)};
}

// Rows [r0, r1) of a tensor as the writer converts them: values, then from_float on each row.
void fill_rows(const Generator& g, DType type, int64_t ne0, int64_t r0, int64_t r1, uint8_t* out) {
  const size_t rb = row_bytes(type, ne0);
#pragma omp parallel if ((r1 - r0) * ne0 >= (int64_t{1} << 16))
  {
    std::vector<float> row(static_cast<size_t>(ne0));
#pragma omp for schedule(static)
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < ne0; ++i) row[static_cast<size_t>(i)] = g.at(r * ne0 + i);
      from_float(type, row.data(), out + static_cast<size_t>(r) * rb, ne0);
    }
  }
}

// A mix's quantized tensor: its first rows (the pool) converted, every later row a copy of one of
// them picked by a hash of its index.
void fill_pooled(const Generator& g, DType type, int64_t ne0, int64_t n_rows, int64_t pool_values, uint8_t* out) {
  const size_t rb = row_bytes(type, ne0);
  const int64_t pool = std::clamp<int64_t>(pool_values / ne0, 1, n_rows);
  fill_rows(g, type, ne0, 0, pool, out);
#pragma omp parallel for schedule(static) if (n_rows >= 4096)
  for (int64_t r = pool; r < n_rows; ++r) {
    const auto from = static_cast<int64_t>(splitmix64(static_cast<uint64_t>(r)) % static_cast<uint64_t>(pool));
    std::memcpy(out + static_cast<size_t>(r) * rb, out + static_cast<size_t>(from) * rb, rb);
  }
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = {qwen35_0_8b(), qwen35_9b(), qwen35_35b_a3b(), tiny(), tiny_moe()};
  return presets;
}

const SynthPreset* find_preset(const std::string& name) {
  for (const SynthPreset& p : synth_presets())
    if (p.name == name) return &p;
  return nullptr;
}

float synth_value(uint64_t seed, const TensorSpec& s, int64_t i) { return generator(seed, s).at(i); }

Result<SynthModel> SynthModel::create(const SynthOptions& opt) {
  const SynthPreset* preset = find_preset(opt.preset);
  if (!preset) {
    std::vector<std::string> names;
    for (const SynthPreset& p : synth_presets()) names.push_back(p.name);
    return Error(fmt::format("unknown preset '{}' (available: {})", opt.preset, fmt::join(names, ", ")));
  }
  if (opt.type != DType::F32 && opt.type != DType::F16 && opt.type != DType::BF16 && opt.type != DType::Q8_0)
    return Error(fmt::format("unsupported type {} (use f32, f16, bf16 or q8_0)", dtype_name(opt.type)));
  const Hparams& d = preset->dims;
  GLT_TRY(d.validate());

  SynthModel m;
  m.preset_ = preset->name;
  m.seed_ = opt.seed;
  m.specs_ = tensor_specs(d);
  for (size_t i = 0; i < m.specs_.size(); ++i) {
    m.types_.push_back(output_type(m.specs_[i], opt.type));
    m.index_.emplace(m.specs_[i].name, i);
    m.n_params_ += static_cast<uint64_t>(m.specs_[i].nelements());
  }
  GgufFile meta;
  write_model_keys(meta, d, preset->name, opt.type);
  write_tokenizer_keys(meta, synth_tokenizer(d.n_vocab));
  Result<GgufFile> layout = streamed_layout(meta, m.out_tensors());
  if (!layout) return Error(layout.error());
  m.layout_ = std::move(layout).value();
  if (!opt.mix.empty()) {
    if (opt.pool_values < 1) return Error(fmt::format("pool_values {} (at least 1)", opt.pool_values));
    m.pool_values_ = opt.pool_values;
    GLT_TRY(m.apply_mix(opt.mix, std::move(meta)));
  }
  return m;
}

Status SynthModel::apply_mix(const std::string& name, GgufFile meta) {
  const MixFileType* ft = mix_file_type_by_name(name);
  if (!ft) return Error(fmt::format("unknown file type '{}' (use {})", name, mix_file_type_names()));
  Result<MixModel> mm = mix_model_from_gguf(layout_);
  if (!mm) return Error(mm.error());
  Result<std::vector<uint32_t>> types = mix_tensor_types(*ft, *mm, layout_.tensors());
  if (!types) return Error(types.error());
  for (size_t i = 0; i < types_.size(); ++i) {
    const std::optional<DType> t = dtype_from_ggml((*types)[i]);
    if (!t) return Error(fmt::format("{}: ggml type {} of '{}' is not one of ours", name, (*types)[i], specs_[i].name));
    types_[i] = *t;
  }
  meta.set("general.file_type", ft->llama_ftype);
  meta.set("general.quantization_version", kQuantizationVersion);
  Result<GgufFile> layout = streamed_layout(meta, out_tensors());
  if (!layout) return Error(layout.error());
  layout_ = std::move(layout).value();
  return {};
}

std::vector<OutTensor> SynthModel::out_tensors() const {
  std::vector<OutTensor> ts;
  for (size_t i = 0; i < specs_.size(); ++i) ts.push_back(synth_tensor(seed_, specs_[i], types_[i]));
  return ts;
}

Status SynthModel::fill(const GgufTensorInfo& t, void* dst) const {
  auto it = index_.find(t.name);
  if (it == index_.end()) return Error(fmt::format("synth {}: no tensor named '{}'", preset_, t.name));
  const TensorSpec& s = specs_[it->second];
  const GgufTensorInfo& own = layout_.tensors()[it->second];
  if (own.ggml_type != t.ggml_type || own.ne != t.ne || own.nbytes != t.nbytes)
    return Error(
        fmt::format("synth {}: tensor '{}' has another type or shape than the synthesized one", preset_, t.name));
  const Generator g = generator(seed_, s);
  const DType type = types_[it->second];
  const int64_t ne0 = s.ne[0], n_rows = s.nelements() / ne0;
  auto* out = static_cast<uint8_t*>(dst);
  if (pool_values_ > 0 && dtype_traits(type).is_quant) {
    fill_pooled(g, type, ne0, n_rows, pool_values_, out);
  } else {
    fill_rows(g, type, ne0, 0, n_rows, out);
  }
  return {};
}

Result<SynthReport> synth_model(const SynthOptions& opt) {
  if (!opt.mix.empty())
    return Error(fmt::format(
        "a {} mix is made in memory only (bench --synth); for a file, quantize the gguf-synth model", opt.mix));
  Result<SynthModel> m = SynthModel::create(opt);
  if (!m) return Error(m.error());
  SynthReport rep;
  rep.layout = m->layout();
  rep.n_params = m->n_params();
  if (opt.dry_run) return rep;
  if (opt.output.empty()) return Error("no output file given");
  Result<WriteStats> st =
      write_streamed(opt.output, m->layout(), m->out_tensors(), {.progress = opt.progress, .label = "synth"});
  if (!st) return Error(st.error());
  rep.stats = *st;
  return rep;
}

}  // namespace gl::tools
