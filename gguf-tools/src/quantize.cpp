// quantize.cpp - streaming GGUF re-encoding (gguf-quantize).
#include "gguf-tools/quantize.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ggml-lite/gguf.h"
#include "gguf-tools/model_spec.h"
#include "gguf-tools/progress.h"
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

}  // namespace

Result<QuantizeReport> quantize_file(const QuantizeOptions& opt) {
  if (opt.type != DType::Q8_0 && !dtype_traits(opt.type).is_float)
    return Error(fmt::format("unsupported target type {} (use q8_0, f16, bf16 or f32)", dtype_name(opt.type)));
  Result<GgufFile> in = GgufFile::open(opt.input);
  if (!in) return Error(in.error());
  GgufFile meta;
  for (const GgufKV& kv : in->kvs()) meta.set(kv.key, kv.value);
  meta.set("general.file_type", llama_ftype(opt.type));
  if (dtype_traits(opt.type).is_quant) meta.set("general.quantization_version", kQuantizationVersion);

  QuantizeReport rep;
  std::vector<std::optional<DType>> targets;
  for (const GgufTensorInfo& t : in->tensors()) {
    targets.push_back(target_type(t, opt.type));
    const uint32_t ggml_type = targets.back() ? dtype_traits(*targets.back()).ggml_type : t.ggml_type;
    GLT_TRY(meta.add_tensor(t.name, ggml_type, std::span<const int64_t>(t.ne.data(), t.n_dims)));
    ++(targets.back() ? rep.n_converted : rep.n_copied);
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
    GLT_TRY(targets[i] ? write_converted(w, i, t, *targets[i], p) : write_copied(w, i, t, p));
  }
  GLT_TRY(w.finish());
  p.finish();
  return rep;
}

}  // namespace gl::tools
