// quantize.cpp - streaming GGUF re-encoding (gguf-quantize).
#include "gguf-tools/quantize.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ggml-lite/gguf.h"
#include "ggml-lite/quants/quants.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/progress.h"
#include "gguf-tools/quant_mix.h"
#include "util.h"

namespace gl::tools {
namespace {

// ggml_n_dims: trailing dimensions of 1 do not count.
int effective_dims(const GgufTensorInfo& t) {
  int n = 1;
  for (int i = 1; i < 4; ++i)
    if (t.ne[static_cast<size_t>(i)] > 1) n = i + 1;
  return n;
}

// The type tensor t gets, or nullopt to copy it unchanged.
std::optional<DType> target_type(const GgufTensorInfo& t, DType type) {
  const std::optional<DType> src = t.dtype();
  if (!src || !dtype_traits(*src).is_float || *src == type) return std::nullopt;
  if (keep_f32(t.name, effective_dims(t))) return std::nullopt;
  if (dtype_traits(type).is_quant && t.ne[0] % dtype_traits(type).block_size != 0) return std::nullopt;
  return type;
}

// Re-encodes whole ggml rows, a few MB at a time.
Status write_converted(GgufWriter& w, size_t index, const GgufTensorInfo& t, DType to, Progress& p) {
  const DType from = *t.dtype();
  const int64_t ne0 = t.ne[0], n_rows = t.nelements() / ne0;
  const int64_t step = std::max<int64_t>(1, (int64_t{1} << 22) / ne0);
  const size_t in_rb = row_bytes(from, ne0), out_rb = row_bytes(to, ne0);
  std::vector<uint8_t> out;
  for (int64_t r0 = 0; r0 < n_rows; r0 += step) {
    const int64_t n = std::min(step, n_rows - r0);
    out.resize(out_rb * static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (n * ne0 >= (int64_t{1} << 16))
    for (int64_t r = 0; r < n; ++r)
      convert_row(from, t.data + in_rb * static_cast<size_t>(r0 + r), to, out.data() + out_rb * static_cast<size_t>(r),
                  ne0);
    GL_TRY(w.write_tensor_data(index, out));
    p.add_bytes(out.size());
  }
  return {};
}

Status write_copied(GgufWriter& w, size_t index, const GgufTensorInfo& t, Progress& p) {
  constexpr uint64_t kChunk = uint64_t{64} << 20;
  for (uint64_t off = 0; off < t.nbytes; off += kChunk) {
    const uint64_t n = std::min(kChunk, t.nbytes - off);
    GL_TRY(w.write_tensor_data(index, {t.data + off, static_cast<size_t>(n)}));
    p.add_bytes(n);
  }
  return {};
}

// Rows of one ggml type to and from f32: float types and q8_0 through convert_row, the other
// block types through the quant registry (byte-identical with llama.cpp's reference quantizers).
struct RowCodec {
  std::optional<DType> dtype;
  const QuantRef* quant = nullptr;

  size_t row_size(int64_t n) const {
    return dtype ? row_bytes(*dtype, n) : static_cast<size_t>(n / quant->block_size) * quant->block_bytes;
  }
  void to_f32(const uint8_t* src, float* dst, int64_t n) const {
    if (dtype)
      convert_row(*dtype, src, DType::F32, dst, n);
    else
      quant->to_float(src, dst, n);
  }
  void from_f32(const float* src, uint8_t* dst, int64_t n) const {
    if (dtype)
      convert_row(DType::F32, src, *dtype, dst, n);
    else
      quant->from_float(src, dst, n);
  }
};

std::string codec_type_names() {
  std::string out = "f32, f16, bf16, q8_0";
  for (const QuantRef& q : quant_refs()) out += ", " + std::string(q.name);
  return out;
}

Result<RowCodec> codec_for(const GgufFile& f, const GgufTensorInfo& t, uint32_t ggml_type, bool source) {
  const std::optional<DType> d = dtype_from_ggml(ggml_type);
  if (d && (dtype_traits(*d).is_float || *d == DType::Q8_0)) return RowCodec{.dtype = d};
  if (const QuantRef* q = quant_ref_by_ggml_type(ggml_type); q && q->block_size > 0) return RowCodec{.quant = q};
  return Error(fmt::format("{}: tensor '{}': gguf-quantize cannot {} type {} (it handles {})", f.name(), t.name,
                           source ? "dequantize" : "write", ggml_type_name(ggml_type), codec_type_names()));
}

// Decodes whole rows to f32 and re-encodes them, a few MB at a time (any source and target).
Status write_recoded(GgufWriter& w, size_t index, const GgufTensorInfo& t, const RowCodec& from, const RowCodec& to,
                     Progress& p) {
  const int64_t ne0 = t.ne[0], n_rows = t.nelements() / ne0;
  const int64_t step = std::max<int64_t>(1, (int64_t{1} << 20) / ne0);
  const size_t in_rb = from.row_size(ne0), out_rb = to.row_size(ne0);
  std::vector<uint8_t> out;
  std::vector<float> rows;
  for (int64_t r0 = 0; r0 < n_rows; r0 += step) {
    const int64_t n = std::min(step, n_rows - r0);
    out.resize(out_rb * static_cast<size_t>(n));
    rows.resize(static_cast<size_t>(n * ne0));
#pragma omp parallel for schedule(static) if (n * ne0 >= (int64_t{1} << 16))
    for (int64_t r = 0; r < n; ++r) {
      float* row = rows.data() + r * ne0;
      from.to_f32(t.data + in_rb * static_cast<size_t>(r0 + r), row, ne0);
      to.from_f32(row, out.data() + out_rb * static_cast<size_t>(r), ne0);
    }
    GL_TRY(w.write_tensor_data(index, out));
    p.add_bytes(out.size());
  }
  return {};
}

// The ggml type of every tensor: the mix policy, or for a plain f32/f16/bf16/q8_0 target the
// rule gguf-quantize always had (target_type).
Result<std::vector<uint32_t>> plan_types(const GgufFile& in, const MixFileType* mix, DType type) {
  if (mix) {
    Result<MixModel> m = mix_model_from_gguf(in);
    if (!m) return Error(m.error());
    return mix_tensor_types(*mix, *m, in.tensors());
  }
  std::vector<uint32_t> types;
  for (const GgufTensorInfo& t : in.tensors()) {
    const std::optional<DType> to = target_type(t, type);
    types.push_back(to ? dtype_traits(*to).ggml_type : t.ggml_type);
  }
  return types;
}

// The mix for a --type name, or nullptr for the plain types handled by target_type.
Result<const MixFileType*> resolve_mix(const QuantizeOptions& opt, DType& type) {
  if (opt.file_type.empty()) {
    if (opt.type != DType::Q8_0 && !dtype_traits(opt.type).is_float)
      return Error(fmt::format("unsupported target type {} (use {})", dtype_name(opt.type), mix_file_type_names()));
    return nullptr;
  }
  const MixFileType* mix = mix_file_type_by_name(opt.file_type);
  if (!mix) return Error(fmt::format("unknown target type '{}' (use {})", opt.file_type, mix_file_type_names()));
  // f32/f16/bf16/q8_0 keep their plain rule; every other name (q4_0, q4_K_M, ...) is a mix.
  const std::optional<DType> plain = dtype_from_name(mix->name);
  if (!plain || !(dtype_traits(*plain).is_float || *plain == DType::Q8_0)) return mix;
  type = *plain;
  return nullptr;
}

}  // namespace

Result<QuantizeReport> quantize_file(const QuantizeOptions& opt) {
  DType type = opt.type;
  Result<const MixFileType*> mix = resolve_mix(opt, type);
  if (!mix) return Error(mix.error());
  Result<GgufFile> in = GgufFile::open(opt.input);
  if (!in) return Error(in.error());
  Result<std::vector<uint32_t>> types = plan_types(*in, *mix, type);
  if (!types) return Error(types.error());
  const std::optional<DType> plain = *mix ? dtype_from_ggml((*mix)->default_type) : type;
  const bool quantized = !plain || dtype_traits(*plain).is_quant;
  GgufFile meta;
  for (const GgufKV& kv : in->kvs()) meta.set(kv.key, kv.value);
  meta.set("general.file_type", *mix ? (*mix)->llama_ftype : llama_ftype(type));
  if (quantized) meta.set("general.quantization_version", kQuantizationVersion);

  // Codecs are checked before anything is written, so a type we cannot handle leaves no output.
  QuantizeReport rep;
  std::vector<std::optional<std::pair<RowCodec, RowCodec>>> codecs(in->tensors().size());
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const GgufTensorInfo& t = in->tensors()[i];
    const uint32_t to = (*types)[i];
    GLT_TRY(meta.add_tensor(t.name, to, std::span<const int64_t>(t.ne.data(), t.n_dims)));
    ++(to != t.ggml_type ? rep.n_converted : rep.n_copied);
    if (to == t.ggml_type) continue;
    Result<RowCodec> from = codec_for(*in, t, t.ggml_type, true), into = codec_for(*in, t, to, false);
    if (!from) return Error(from.error());
    if (!into) return Error(into.error());
    codecs[i] = std::pair{*from, *into};
  }
  Result<uint64_t> in_size = in->file_size(), out_size = meta.file_size();
  if (!in_size) return Error(in_size.error());
  if (!out_size) return Error(out_size.error());
  rep.bytes_in = *in_size;
  rep.bytes_out = *out_size;

  uint64_t data_bytes = 0;
  for (const GgufTensorInfo& t : meta.tensors()) data_bytes += t.nbytes;
  GgufWriter w(opt.output);
  GLT_TRY(w.begin(meta));
  Progress p("quantize", data_bytes, in->tensors().size(), opt.progress);
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const GgufTensorInfo& t = in->tensors()[i];
    p.begin_item(i, t.name);
    if (!codecs[i]) {
      GLT_TRY(write_copied(w, i, t, p));
    } else if (codecs[i]->first.dtype && codecs[i]->second.dtype && dtype_traits(*codecs[i]->first.dtype).is_float) {
      GLT_TRY(write_converted(w, i, t, *codecs[i]->second.dtype, p));  // the path plain targets always took
    } else {
      GLT_TRY(write_recoded(w, i, t, codecs[i]->first, codecs[i]->second, p));
    }
  }
  GLT_TRY(w.finish());
  p.finish();
  return rep;
}

}  // namespace gl::tools
