// stream_writer.cpp - chunked production, conversion and writing of GGUF tensor data.
#include "gguf-tools/stream_writer.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <span>

#include <fmt/format.h>

#include "gguf-tools/progress.h"
#include "util.h"

namespace gl::tools {

int64_t OutTensor::nelements() const {
  int64_t n = 1;
  for (int64_t x : ne) n *= x;
  return n;
}

Result<GgufFile> streamed_layout(const GgufFile& meta, const std::vector<OutTensor>& ts) {
  GgufFile out;
  for (const GgufKV& kv : meta.kvs()) out.set(kv.key, kv.value);
  for (const OutTensor& t : ts) {
    if (t.row_len <= 0 || t.nelements() % t.row_len != 0)
      return Error(fmt::format("tensor '{}': {} elements are not whole rows of {}", t.name, t.nelements(), t.row_len));
    GLT_TRY(out.add_tensor(t.name, dtype_traits(t.type).ggml_type, t.ne));
  }
  return out;
}

namespace {

// Converts n_grows ggml rows of ne0 floats to type, in parallel over rows.
void convert_rows(DType type, const float* src, int64_t ne0, int64_t n_grows, uint8_t* dst) {
  const size_t rb = row_bytes(type, ne0);
#pragma omp parallel for schedule(static) if (n_grows * ne0 >= (int64_t{1} << 16))
  for (int64_t g = 0; g < n_grows; ++g) from_float(type, src + g * ne0, dst + static_cast<size_t>(g) * rb, ne0);
}

// Rows per chunk: whole ggml rows (a multiple of lcm(row_len, ne0) elements), about target elements.
int64_t rows_per_chunk(const OutTensor& t, int64_t target) {
  const int64_t unit = std::lcm(t.row_len, t.ne[0]);
  return std::max<int64_t>(1, target / unit) * (unit / t.row_len);
}

Status write_tensor(GgufWriter& w, size_t index, const OutTensor& t, const WriteOptions& opt, Progress& p,
                    std::vector<float>& buf, std::vector<uint8_t>& bytes) {
  const int64_t n_rows = t.nelements() / t.row_len;
  const int64_t step = rows_per_chunk(t, opt.chunk_elements);
  for (int64_t r0 = 0; r0 < n_rows; r0 += step) {
    const int64_t n = std::min(step, n_rows - r0);
    const int64_t elems = n * t.row_len;
    buf.resize(static_cast<size_t>(elems));
    t.fill(r0, n, buf.data());
    std::span<const uint8_t> out;
    if (t.type == DType::F32) {
      out = {reinterpret_cast<const uint8_t*>(buf.data()), static_cast<size_t>(elems) * sizeof(float)};
    } else {
      bytes.resize(row_bytes(t.type, elems));
      convert_rows(t.type, buf.data(), t.ne[0], elems / t.ne[0], bytes.data());
      out = bytes;
    }
    GL_TRY(w.write_tensor_data(index, out));
    p.add_bytes(out.size());
  }
  return {};
}

}  // namespace

Result<WriteStats> write_streamed(const std::string& path, const GgufFile& meta, const std::vector<OutTensor>& ts,
                                  const WriteOptions& opt) {
  Result<GgufFile> layout = streamed_layout(meta, ts);
  if (!layout) return Error(fmt::format("{}: {}", path, layout.error()));
  WriteStats stats;
  stats.n_tensors = ts.size();
  for (const GgufTensorInfo& t : layout->tensors()) stats.tensor_bytes += t.nbytes;
  Result<uint64_t> file_bytes = layout->file_size();
  if (!file_bytes) return Error(file_bytes.error());
  stats.file_bytes = *file_bytes;

  GgufWriter w(path);
  GLT_TRY(w.begin(*layout));
  Progress p(opt.label, stats.tensor_bytes, ts.size(), opt.progress);
  std::vector<float> buf;
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < ts.size(); ++i) {
    p.begin_item(i, ts[i].name);
    GLT_TRY(write_tensor(w, i, ts[i], opt, p, buf, bytes));
  }
  GLT_TRY(w.finish());
  p.finish();
  return stats;
}

}  // namespace gl::tools
