// gguf_fuzz.cpp - fuzz target for the GGUF reader (and writer, on what it accepts).
//
// Properties checked on every input: parsing never crashes or over-reads; an error
// names the buffer and a byte offset; an accepted file's tensors lie inside the input;
// re-encoding an accepted file gives a file that parses and re-encodes to the same bytes.
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "ggml-lite/gguf.h"

namespace {

constexpr uint64_t kMaxRoundTripBytes = 1 << 20;
constexpr float kSeedF32[8] = {1, 2, 3, 4, 5, 6, 7, 8};
constexpr uint8_t kSeedBlocks[2 * 144] = {};

uint64_t touch(const gl::GgufFile& f, const uint8_t* begin, const uint8_t* end) {
  uint64_t sum = 0;
  for (const gl::GgufKV& kv : f.kvs()) {
    sum += kv.key.size() + static_cast<uint64_t>(gl::gguf_type_of(kv.value));
    if (const auto* a = std::get_if<gl::GgufArray>(&kv.value)) sum += a->size();
    (void)f.get_int(kv.key);
  }
  for (const gl::GgufTensorInfo& t : f.tensors()) {
    GL_ASSERT(t.nbytes == 0 || (t.data >= begin && t.data + t.nbytes <= end), "tensor data outside the input");
    for (uint8_t b : t.bytes()) sum += b;
    (void)f.tensor_dtype(t);
    GL_ASSERT(f.find_tensor(t.name) == &t, "find_tensor must find the first (unique) name");
  }
  return sum;
}

void check_round_trip(const gl::GgufFile& f) {
  gl::Result<uint64_t> size = f.file_size();
  if (!size || *size > kMaxRoundTripBytes) return;
  gl::Result<std::vector<uint8_t>> bytes = f.to_bytes();
  GL_ASSERT(bytes.ok(), "an accepted file must re-encode");
  GL_ASSERT(bytes->size() == *size, "file_size() must match to_bytes()");
  gl::Result<gl::GgufFile> again = gl::GgufFile::from_buffer(*bytes, "again.gguf");
  GL_ASSERT(again.ok(), "a re-encoded file must parse");
  gl::Result<std::vector<uint8_t>> bytes2 = again->to_bytes();
  GL_ASSERT(bytes2.ok() && *bytes2 == *bytes, "re-encoding must be stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gl::Result<gl::GgufFile> f = gl::GgufFile::from_buffer({data, size}, "fuzz.gguf");
  if (!f) {
    GL_ASSERT(f.error().rfind("fuzz.gguf: offset ", 0) == 0, "errors must name the file and offset");
    return 0;
  }
  volatile uint64_t sink = touch(*f, data, data + size);
  (void)sink;
  check_round_trip(*f);
  return 0;
}

std::vector<std::vector<uint8_t>> gl_fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds;
  gl::GgufFile a;
  a.set("general.architecture", "qwen35");
  a.set("qwen35.block_count", uint32_t{2});
  a.set("qwen35.rope.dimension_sections", gl::GgufArray::of<int32_t>({11, 11, 10, 0}));
  a.set("tokenizer.ggml.tokens", gl::GgufArray::of<std::string>({"a", "bc", ""}));
  a.set("f", gl::GgufArray::of<bool>({true, false}));
  a.set("x", 1.5);
  a.set("b", true);
  GL_ASSERT(a.add_tensor("token_embd.weight", gl::DType::F32, {4, 2}, kSeedF32).ok(), "seed");
  GL_ASSERT(a.add_tensor("n", gl::DType::F16, {3}, kSeedF32).ok(), "seed");
  seeds.push_back(*a.to_bytes());
  gl::GgufFile b;
  b.set("general.alignment", uint32_t{64});
  const std::vector<int64_t> ne = {256, 2};
  GL_ASSERT(b.add_tensor("blk.0.ffn_down.weight", 12u, ne, kSeedBlocks).ok(), "seed");
  GL_ASSERT(b.add_tensor("q", gl::DType::Q8_0, {32}, kSeedBlocks).ok(), "seed");
  seeds.push_back(*b.to_bytes());
  seeds.push_back(*gl::GgufFile().to_bytes());
  return seeds;
}
