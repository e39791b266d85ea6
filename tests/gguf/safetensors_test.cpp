// safetensors reader: hand-written files (JSON header + bytes), single and sharded.
#include <filesystem>

#include "gguf-tools/safetensors.h"
#include "test_util.h"

namespace gl {
namespace {

namespace fs = std::filesystem;

// u64 header length, the JSON padded with spaces to a multiple of 8, then data.
std::vector<uint8_t> st_bytes(std::string header, size_t data_bytes, uint8_t fill = 0) {
  header.resize((header.size() + 7) / 8 * 8, ' ');
  test::Bytes b;
  b.u64(header.size());
  b.b.insert(b.b.end(), header.begin(), header.end());
  b.b.resize(b.b.size() + data_bytes, fill);
  return b.b;
}

// Two tensors: "a" F32 [2, 3] (24 bytes) and "b" BF16 [4] (8 bytes), plus metadata.
const char* kGood = R"({"__metadata__": {"format": "pt"},
  "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
  "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";

std::string st_error(const std::vector<uint8_t>& bytes, std::string_view needle) {
  Result<SafetensorsFile> f = SafetensorsFile::from_buffer(bytes, "bad.safetensors");
  EXPECT_FALSE(f.ok()) << "expected an error containing: " << needle;
  if (f.ok()) return {};
  EXPECT_NE(f.error().find(needle), std::string::npos) << "error was: " << f.error() << "\nexpected: " << needle;
  EXPECT_EQ(f.error().rfind("bad.safetensors: ", 0), 0u) << f.error();
  return f.error();
}

TEST(Safetensors, ReadsAValidFile) {
  std::vector<uint8_t> bytes = st_bytes(kGood, 32);
  for (size_t i = 0; i < 32; ++i) bytes[bytes.size() - 32 + i] = static_cast<uint8_t>(i);
  Result<SafetensorsFile> f = SafetensorsFile::from_buffer(bytes, "m.safetensors");
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  const SafetensorsTensor* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*a->dtype(), DType::F32);
  EXPECT_EQ(*a->ggml_ne(), (std::array<int64_t, 4>{3, 2, 1, 1}));
  EXPECT_EQ(a->nelements(), 6);
  ASSERT_EQ(a->data.size(), 24u);
  EXPECT_EQ(a->data[0], 0);
  const SafetensorsTensor* b = f->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*b->dtype(), DType::BF16);
  EXPECT_EQ(b->data[0], 24);
  EXPECT_EQ(f->find("c"), nullptr);
}

TEST(Safetensors, UnsupportedDTypeIsReadableButNamed) {
  std::vector<uint8_t> bytes = st_bytes(R"({"e": {"dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [0, 4]}})", 4);
  Result<SafetensorsFile> f = SafetensorsFile::from_buffer(bytes, "fp8.safetensors");
  ASSERT_TRUE(f.ok()) << f.error();
  Result<DType> dt = f->tensors()[0].dtype();
  ASSERT_FALSE(dt.ok());
  EXPECT_EQ(dt.error(), "fp8.safetensors: tensor 'e' has dtype F8_E4M3 (supported: F32, F16, BF16)");
}

TEST(Safetensors, MoreThanFourDimsHasNoGgmlShape) {
  std::vector<uint8_t> bytes = st_bytes(R"({"x": {"dtype": "F16", "shape": [1,1,1,1,2], "data_offsets": [0, 4]}})", 4);
  Result<SafetensorsFile> f = SafetensorsFile::from_buffer(bytes, "x.safetensors");
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_NE(f->tensors()[0].ggml_ne().error().find("has 5 dims"), std::string::npos);
}

TEST(Safetensors, HeaderBounds) {
  st_error({1, 2, 3}, "3 bytes is too small for the 8-byte header length");
  test::Bytes b;
  b.u64(1000).zeros(10);
  st_error(b.b, "header length 1000 exceeds the 10 bytes after it");
  st_error(st_bytes("[]", 0), "header does not start with '{'");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], )", 0), "invalid JSON");
}

TEST(Safetensors, EmptyHeaderIsValid) {
  Result<SafetensorsFile> f = SafetensorsFile::from_buffer(st_bytes("{}", 0));
  EXPECT_TRUE(f.ok()) << f.error();
}

TEST(Safetensors, EntryValidation) {
  st_error(st_bytes(R"({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}})", 4),
           "tensor 'a': unknown dtype 'Q4'");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
           "tensor 'a': shape entry -1 is not a non-negative integer");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4),
           "shape entry 1.5 is not a non-negative integer");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
           "'data_offsets' must be two non-negative integers");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}})", 4),
           "tensor 'a': unexpected field 'x'");
  st_error(st_bytes(R"({"a": [1]})", 0), "tensor 'a': entry is a JSON array, expected an object");
  st_error(st_bytes(R"({"__metadata__": {"k": 1}})", 0), "__metadata__ 'k' is not a string");
}

TEST(Safetensors, OffsetValidation) {
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 4),
           "tensor 'a': data_offsets [4, 0) have begin > end");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4),
           "tensor 'a': data_offsets [0, 8) exceed the data region of 4 bytes");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4),
           "tensor 'a': 4 bytes in data_offsets, but shape [2] of F32 needs 8");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4),
           "element count overflows");
}

TEST(Safetensors, CoverageValidation) {
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                    8),
           "tensor 'b' [4, 8) overlaps tensor 'a' [0, 8)");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
           "4 bytes before tensor 'a' (offset 4) belong to no tensor");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8),
           "4 bytes at the end of the data region belong to no tensor");
}

TEST(Safetensors, DuplicateNamesAndDeepNesting) {
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                        "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                    4),
           "duplicate JSON key 'a'");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}})", 4),
           "duplicate JSON key 'dtype'");
  st_error(st_bytes(R"({"a": {"dtype": "F32", "shape": [[[[1]]]], "data_offsets": [0, 4]}})", 4),
           "JSON nested deeper than 4 levels");
}

// Writes shard files and an index into a fresh directory.
struct Sharded {
  std::string dir = test::tmp_path("ckpt");
  Sharded() { fs::create_directories(dir); }
  void file(const std::string& name, const std::vector<uint8_t>& bytes) const {
    test::write_file(dir + "/" + name, bytes);
  }
  void index(const std::string& weight_map) const {
    test::write_file(dir + "/model.safetensors.index.json",
                     R"({"metadata": {"total_size": 12}, "weight_map": )" + weight_map + "}");
  }
};

const char* kShard1 = R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
const char* kShard2 = R"({"y": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})";

TEST(SafetensorsModel, OpensShardsThroughTheIndex) {
  Sharded s;
  s.file("model-00001-of-00002.safetensors", st_bytes(kShard1, 8));
  s.file("model-00002-of-00002.safetensors", st_bytes(kShard2, 4));
  s.index(R"({"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"})");
  Result<SafetensorsModel> m = SafetensorsModel::open(s.dir);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->shards().size(), 2u);
  ASSERT_EQ(m->tensors().size(), 2u);
  ASSERT_NE(m->find("y"), nullptr);
  EXPECT_EQ(*m->find("y")->dtype(), DType::F16);
  EXPECT_NE(m->find("y")->file.find("model-00002-of-00002.safetensors"), std::string::npos);
  Result<SafetensorsModel> via_json = SafetensorsModel::open(s.dir + "/model.safetensors.index.json");
  EXPECT_TRUE(via_json.ok()) << via_json.error();
}

TEST(SafetensorsModel, SingleFileDirectory) {
  Sharded s;
  s.file("model.safetensors", st_bytes(kShard1, 8));
  Result<SafetensorsModel> m = SafetensorsModel::open(s.dir);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_NE(m->find("x"), nullptr);
}

TEST(SafetensorsModel, IndexErrors) {
  Sharded s;
  s.file("a.safetensors", st_bytes(kShard1, 8));
  s.file("b.safetensors", st_bytes(kShard1, 8));
  s.index(R"({"x": "a.safetensors", "y": "a.safetensors"})");
  Result<SafetensorsModel> m = SafetensorsModel::open(s.dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("tensor 'y' is listed in shard 'a.safetensors' but missing from it"), std::string::npos)
      << m.error();
  s.index(R"({"x": "../a.safetensors"})");
  EXPECT_NE(SafetensorsModel::open(s.dir).error().find("is not a plain file name"), std::string::npos);
  s.index(R"({"x": "missing.safetensors"})");
  EXPECT_NE(SafetensorsModel::open(s.dir).error().find("shard 'missing.safetensors'"), std::string::npos);
  s.file("b.safetensors", st_bytes(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                      "x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                   8));
  s.index(R"({"x": "a.safetensors", "w": "b.safetensors"})");
  EXPECT_NE(SafetensorsModel::open(s.dir).error().find("tensor 'x' appears in both"), std::string::npos);
  s.index(R"({"x": 3})");
  EXPECT_NE(SafetensorsModel::open(s.dir).error().find("weight_map['x'] is a JSON integer"), std::string::npos);
  s.index("[]");
  EXPECT_NE(SafetensorsModel::open(s.dir).error().find("missing 'weight_map' object"), std::string::npos);
  EXPECT_NE(SafetensorsModel::open(s.dir + "/none").error().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace gl
