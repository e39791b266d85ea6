// GGUF model, typed access, writer and read/write round trips.
#include <filesystem>
#include <numeric>

#include "ggml-lite/gguf.h"
#include "test_util.h"

namespace gl {
namespace {

using test::SmallData;

// Every value type, and an array of every non-array type.
GgufFile all_types_file() {
  GgufFile f;
  f.set("general.architecture", "test");
  f.set("v.u8", uint8_t{200});
  f.set("v.i8", int8_t{-100});
  f.set("v.u16", uint16_t{60000});
  f.set("v.i16", int16_t{-30000});
  f.set("v.u32", uint32_t{4000000000u});
  f.set("v.i32", int32_t{-2000000000});
  f.set("v.f32", 1.5f);
  f.set("v.bool", true);
  f.set("v.string", std::string("hello \xe2\x9c\x93"));
  f.set("v.u64", uint64_t{1} << 63);
  f.set("v.i64", int64_t{-1} << 62);
  f.set("v.f64", 2.25);
  f.set("a.u8", GgufArray::of<uint8_t>({1, 2, 255}));
  f.set("a.i8", GgufArray::of<int8_t>({-1, 2}));
  f.set("a.u16", GgufArray::of<uint16_t>({1, 65535}));
  f.set("a.i16", GgufArray::of<int16_t>({-5}));
  f.set("a.u32", GgufArray::of<uint32_t>({11, 11, 10, 0}));
  f.set("a.i32", GgufArray::of<int32_t>({11, 11, 10, 0}));
  f.set("a.f32", GgufArray::of<float>({0.5f, -1.0f}));
  f.set("a.bool", GgufArray::of<bool>({true, false, true}));
  f.set("a.string", GgufArray::of<std::string>({"x", "", "tokens with spaces"}));
  f.set("a.u64", GgufArray::of<uint64_t>({1, 2}));
  f.set("a.i64", GgufArray::of<int64_t>({-1}));
  f.set("a.f64", GgufArray::of<double>({3.0}));
  f.set("a.empty", GgufArray::of<std::string>(std::vector<std::string>{}));
  return f;
}

TEST(GgufRoundTrip, AllValueTypesSurviveWriteReadWrite) {
  GgufFile f = all_types_file();
  const std::string p1 = test::tmp_path("1.gguf"), p2 = test::tmp_path("2.gguf");
  ASSERT_TRUE(f.write(p1).ok());
  Result<GgufFile> r = GgufFile::open(p1);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->kvs(), f.kvs());
  EXPECT_EQ(r->version(), 3u);
  ASSERT_TRUE(r->write(p2).ok());
  EXPECT_EQ(test::read_file(p1), test::read_file(p2));
  EXPECT_EQ(test::read_file(p1), *f.to_bytes());
}

TEST(GgufRoundTrip, TensorsAreByteIdenticalAndPacked) {
  SmallData d;
  GgufFile f = test::small_file(d);
  const std::string p1 = test::tmp_path("1.gguf"), p2 = test::tmp_path("2.gguf");
  ASSERT_TRUE(f.write(p1).ok());
  Result<GgufFile> r = GgufFile::open(p1);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->tensors().size(), 3u);
  const GgufTensorInfo& a = r->tensors()[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.n_dims, 2u);
  EXPECT_EQ(a.ne, (std::array<int64_t, 4>{4, 2, 1, 1}));
  EXPECT_EQ(a.nbytes, 32u);
  EXPECT_EQ(0, std::memcmp(a.data, d.a.data(), 32));
  EXPECT_EQ(r->tensors()[1].offset, 32u);  // 32 bytes, already aligned
  EXPECT_EQ(r->tensors()[2].offset, 64u);  // f16 [3] = 6 bytes, padded to 32
  EXPECT_EQ(r->tensors()[2].nbytes, 68u);
  EXPECT_EQ(r->data_offset() % 32, 0u);
  EXPECT_EQ(*r->tensor_dtype(r->tensors()[2]), DType::Q8_0);
  ASSERT_TRUE(r->write(p2).ok());
  EXPECT_EQ(test::read_file(p1), test::read_file(p2));
  EXPECT_EQ(test::read_file(p1).size(), *f.file_size());
}

TEST(GgufRoundTrip, CustomAlignmentIsHonoured) {
  SmallData d;
  GgufFile f = test::small_file(d);
  f.set("general.alignment", uint32_t{256});
  Result<std::vector<uint8_t>> bytes = f.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.error();
  Result<GgufFile> r = GgufFile::from_buffer(*bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->alignment(), 256u);
  EXPECT_EQ(r->data_offset() % 256, 0u);
  EXPECT_EQ(r->tensors()[1].offset, 256u);
  EXPECT_EQ(r->tensors()[2].offset, 512u);
  EXPECT_EQ(bytes->size() % 256, 0u);
  EXPECT_EQ(*r->to_bytes(), *bytes);
}

TEST(GgufRoundTrip, EmptyFileHasNoTensors) {
  GgufFile f;
  Result<std::vector<uint8_t>> bytes = f.to_bytes();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 32u);  // 24-byte header padded to 32
  Result<GgufFile> r = GgufFile::from_buffer(*bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->kvs().empty());
  EXPECT_TRUE(r->tensors().empty());
}

TEST(GgufRoundTrip, ReadsVersion2) {
  SmallData d;
  std::vector<uint8_t> bytes = test::small_bytes(d);
  bytes[4] = 2;
  Result<GgufFile> r = GgufFile::from_buffer(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->version(), 2u);
  bytes[4] = 3;
  EXPECT_EQ(*r->to_bytes(), bytes);  // rewritten as v3
}

TEST(GgufAccess, TypedGetters) {
  GgufFile f = all_types_file();
  f.set("v.i32small", int32_t{24});
  EXPECT_EQ(*f.get<uint32_t>("v.u32"), 4000000000u);
  EXPECT_EQ(*f.get<std::string>("v.string"), "hello \xe2\x9c\x93");
  EXPECT_EQ(*f.get<bool>("v.bool"), true);
  EXPECT_EQ(*f.get_array<int32_t>("a.i32"), (std::vector<int32_t>{11, 11, 10, 0}));
  EXPECT_EQ(*f.get_array<std::string>("a.string"), (std::vector<std::string>{"x", "", "tokens with spaces"}));
  EXPECT_EQ(*f.get_array<bool>("a.bool"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(*f.get_int("v.i32small"), 24);
  EXPECT_EQ(*f.get_int("v.u8"), 200);
  EXPECT_EQ(*f.get_or<uint32_t>("absent", 4u), 4u);

  Result<float> wrong = f.get<float>("v.u32");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(), "<memory>: key 'v.u32' has type u32, expected f32");
  EXPECT_NE(f.get<uint32_t>("nope").error().find("key 'nope' not found (expected u32)"), std::string::npos);
  EXPECT_NE(f.get_array<uint32_t>("a.i32").error().find("has type array of i32, expected array of u32"),
            std::string::npos);
  EXPECT_NE(f.get_or<uint32_t>("v.f32", 1u).error().find("has type f32"), std::string::npos);
  EXPECT_NE(f.get_int("v.u64").error().find("does not fit int64"), std::string::npos);
  EXPECT_NE(f.get_int("v.f32").error().find("expected an integer"), std::string::npos);
}

TEST(GgufAccess, SetReplacesInPlaceOrAppends) {
  GgufFile f;
  f.set("a", uint32_t{1});
  f.set("b", "x");
  f.set("a", 2.0f);  // replace keeps the position, changes the type
  f.set("c", int64_t{3});
  ASSERT_EQ(f.kvs().size(), 3u);
  EXPECT_EQ(f.kvs()[0].key, "a");
  EXPECT_EQ(*f.get<float>("a"), 2.0f);
  EXPECT_EQ(f.kvs()[2].key, "c");
  EXPECT_TRUE(f.remove("b"));
  EXPECT_FALSE(f.remove("b"));
  EXPECT_EQ(f.kvs().size(), 2u);
}

TEST(GgufAccess, AddTensorValidates) {
  GgufFile f;
  EXPECT_TRUE(f.add_tensor(std::string(63, 'n'), DType::F32, {1}).ok());
  EXPECT_NE(f.add_tensor(std::string(64, 'n'), DType::F32, {1}).error().find("is 64 bytes (limit 63)"),
            std::string::npos);
  EXPECT_NE(f.add_tensor(std::string(63, 'n'), DType::F32, {1}).error().find("duplicate tensor name"),
            std::string::npos);
  EXPECT_NE(f.add_tensor("q", DType::Q8_0, {33}).error().find("not a multiple of the q8_0 block size 32"),
            std::string::npos);
  EXPECT_NE(f.add_tensor("n", DType::F32, {1, -2}).error().find("ne[1] = -2 is negative"), std::string::npos);
  const std::vector<int64_t> five = {1, 1, 1, 1, 1};
  EXPECT_NE(f.add_tensor("five", 0u, five).error().find("5 dims"), std::string::npos);
  EXPECT_NE(f.add_tensor("t", 4u, five).error().find("5 dims"), std::string::npos);
  const std::vector<int64_t> one = {1};
  EXPECT_NE(f.add_tensor("r", 4u, one).error().find("unknown or retired ggml type 4"), std::string::npos);
}

TEST(GgufAccess, QuantTypesWeCannotComputeAreMetadata) {
  std::vector<uint8_t> blocks(66 * 2, 0);
  GgufFile f;
  const std::vector<int64_t> ne = {256, 2};
  ASSERT_TRUE(f.add_tensor("k", 16u, ne, blocks.data()).ok());  // iq2_xxs
  Result<std::vector<uint8_t>> bytes = f.to_bytes();
  ASSERT_TRUE(bytes.ok());
  Result<GgufFile> r = GgufFile::from_buffer(*bytes, "k.gguf");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->tensors()[0].nbytes, 132u);
  EXPECT_EQ(ggml_type_name(r->tensors()[0].ggml_type), "iq2_xxs");
  Result<DType> dt = r->tensor_dtype(r->tensors()[0]);
  ASSERT_FALSE(dt.ok());
  EXPECT_EQ(dt.error(), "k.gguf: tensor 'k' has type iq2_xxs, which ggml-lite cannot compute with");
}

TEST(GgufAccess, MappingOutlivesTheFirstCopy) {
  SmallData d;
  const std::string p = test::tmp_path("m.gguf");
  ASSERT_TRUE(test::small_file(d).write(p).ok());
  std::optional<GgufFile> copy;
  {
    Result<GgufFile> r = GgufFile::open(p);
    ASSERT_TRUE(r.ok()) << r.error();
    copy = *r;
  }
  EXPECT_EQ(0, std::memcmp(copy->tensors()[0].data, d.a.data(), 32));
}

TEST(GgufAccess, OpenMissingFile) {
  Result<GgufFile> r = GgufFile::open(test::tmp_path("missing.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace gl
