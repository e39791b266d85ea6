// safetensors_fuzz.cpp - fuzz target for the safetensors header reader.
//
// Properties: no crash or over-read; errors name the buffer; accepted tensors lie
// inside the input, are sorted by name, and have the byte size their shape implies.
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "gguf-tools/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gl::Result<gl::SafetensorsFile> f = gl::SafetensorsFile::from_buffer({data, size}, "fuzz.safetensors");
  if (!f) {
    GL_ASSERT(f.error().rfind("fuzz.safetensors: ", 0) == 0, "errors must name the file");
    return 0;
  }
  uint64_t sum = 0;
  const std::string* prev = nullptr;
  for (const gl::SafetensorsTensor& t : f->tensors()) {
    GL_ASSERT(t.data.empty() || (t.data.data() >= data && t.data.data() + t.data.size() <= data + size),
              "tensor data outside the input");
    GL_ASSERT(!prev || *prev < t.name, "tensors must be sorted and unique");
    prev = &t.name;
    for (uint8_t b : t.data) sum += b;
    (void)t.dtype();
    (void)t.ggml_ne();
    const uint64_t bits = uint64_t(t.nelements()) * uint64_t(gl::safetensors_dtype_bits(t.dtype_name));
    GL_ASSERT(bits / 8 == t.data.size(), "size must match the shape");
  }
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}

namespace {

std::vector<uint8_t> st_bytes(std::string header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0x3f);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

}  // namespace

std::vector<std::vector<uint8_t>> gl_fuzz_seeds() {
  return {
      st_bytes(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
               R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})",
               32),
      st_bytes(R"({"e":{"dtype":"F8_E4M3","shape":[1,1,1,1,2],"data_offsets":[0,2]},)"
               R"("z":{"dtype":"F16","shape":[0],"data_offsets":[2,2]}})",
               2),
      st_bytes("{}", 0),
  };
}
