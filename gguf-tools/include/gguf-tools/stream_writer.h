// stream_writer.h - writes a GGUF file whose tensors are produced piece by piece, so that
// converting or synthesising a 70 GB model needs only a few chunk buffers of memory.
//
//   std::vector<gl::tools::OutTensor> ts;
//   ts.push_back({"x.weight", {4096, 1024}, gl::DType::Q8_0, 4096,
//                 [](int64_t r0, int64_t n, float* out) { /* rows r0 .. r0+n-1, F32 */ }});
//   gl::Status s = gl::tools::write_streamed("out.gguf", meta_kvs_only, ts, {.progress = true});
//
// Each tensor is produced as F32 "rows" of row_len elements (row_len need not equal ne[0]: a
// per-head vector can be produced one element per row). The writer converts each chunk to the
// tensor type (F32/F16/BF16/Q8_0; chunks always hold whole ggml rows) and appends it with
// GgufWriter, which writes "<path>.tmp.XXXXXX" and renames it over path only on success.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"

namespace gl::tools {

// Fills rows [row0, row0 + n_rows) of the tensor's F32 values into out (n_rows * row_len floats).
// May be called from one thread at a time; it may use OpenMP inside.
using RowFiller = std::function<void(int64_t row0, int64_t n_rows, float* out)>;

struct OutTensor {
  std::string name;
  std::vector<int64_t> ne;  // ggml order
  DType type;
  int64_t row_len;  // elements per filler row
  RowFiller fill;

  int64_t nelements() const;
};

struct WriteOptions {
  bool progress = false;                      // draw a progress bar on stderr
  std::string label = "write";                // progress bar label
  int64_t chunk_elements = int64_t{1} << 22;  // target F32 elements per chunk
};

struct WriteStats {
  uint64_t n_tensors = 0;
  uint64_t tensor_bytes = 0;  // sum of tensor data sizes (unpadded)
  uint64_t file_bytes = 0;
};

// meta holds the KV pairs (its tensors, if any, are ignored and replaced by ts).
Result<WriteStats> write_streamed(const std::string& path, const GgufFile& meta, const std::vector<OutTensor>& ts,
                                  const WriteOptions& opt = {});

// The GgufFile (KVs + tensor infos, no data) that write_streamed would write; for dry runs.
Result<GgufFile> streamed_layout(const GgufFile& meta, const std::vector<OutTensor>& ts);

}  // namespace gl::tools
