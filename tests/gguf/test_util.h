// test_util.h - helpers for the GGUF / safetensors / config tests: temp paths,
// a small valid GGUF file, and a byte builder for hand-made (often invalid) files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/gguf.h"

namespace gl::test {

// A fresh path under the build tree, unique per test: <build>/gguf-test-tmp/<Suite>.<Test>.<leaf>.
inline std::string tmp_path(std::string_view leaf) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(GL_BINARY_DIR) / "gguf-test-tmp";
  std::filesystem::create_directories(dir);
  std::filesystem::path p = dir / (std::string(info->test_suite_name()) + "." + info->name() + "." + std::string(leaf));
  std::filesystem::remove_all(p);
  return p.string();
}

inline void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Little-endian byte builder for hand-made GGUF files.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& i32(int32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& i64(int64_t v) { return put(v); }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).i32(4).u32(v); }
  // A tensor info: name, n_dims, ne..., type, offset.
  Bytes& info(std::string_view name, std::vector<int64_t> ne, int32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) i64(d);
    return i32(type).u64(offset);
  }
  Bytes& pad(size_t align = 32) {
    b.resize((b.size() + align - 1) / align * align, 0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

// Parses bytes and expects an error containing `needle`; returns the message.
inline std::string parse_error(const std::vector<uint8_t>& bytes, std::string_view needle,
                               const std::string& name = "bad.gguf") {
  Result<GgufFile> f = GgufFile::from_buffer(bytes, name);
  EXPECT_FALSE(f.ok()) << "expected an error containing: " << needle;
  if (f.ok()) return {};
  EXPECT_NE(f.error().find(needle), std::string::npos) << "error was: " << f.error() << "\nexpected: " << needle;
  EXPECT_EQ(f.error().rfind(name + ": offset ", 0), 0u)
      << "error does not start with the file and offset: " << f.error();
  return f.error();
}

// Data for the small valid file (kept alive for the lifetime of the test binary's files).
struct SmallData {
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint16_t> b = {0x3c00, 0x4000, 0x4200};
  std::vector<uint8_t> q = std::vector<uint8_t>(2 * 34, 0x11);
};

// Two KVs plus three tensors (f32 [4,2], f16 [3], q8_0 [32,2]) with their data set.
inline GgufFile small_file(const SmallData& d) {
  GgufFile f;
  f.set("general.architecture", "test");
  f.set("test.count", uint32_t{7});
  EXPECT_TRUE(f.add_tensor("a", DType::F32, {4, 2}, d.a.data()).ok());
  EXPECT_TRUE(f.add_tensor("b", 1u, std::vector<int64_t>{3}, d.b.data()).ok());
  EXPECT_TRUE(f.add_tensor("q", DType::Q8_0, {32, 2}, d.q.data()).ok());
  return f;
}

inline std::vector<uint8_t> small_bytes(const SmallData& d) {
  Result<std::vector<uint8_t>> bytes = small_file(d).to_bytes();
  EXPECT_TRUE(bytes.ok()) << (bytes.ok() ? "" : bytes.error());
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

}  // namespace gl::test
