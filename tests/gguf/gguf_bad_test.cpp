// Untrusted GGUF input: each hand-made bad file must give its specific error,
// naming the file and byte offset, without crashing or allocating wildly.
#include "ggml-lite/gguf.h"
#include "test_util.h"

namespace gl {
namespace {

using test::Bytes;
using test::parse_error;
using test::SmallData;

constexpr int32_t kF32 = 0, kQ8_0 = 8, kString = 8, kArray = 9, kBool = 7, kU32 = 4, kU64 = 10;

// One f32 tensor 'w' of 8 elements, no KVs; data included.
Bytes one_tensor(std::vector<int64_t> ne = {8}, int32_t type = kF32, std::string_view name = "w") {
  Bytes b;
  b.header(1, 0).info(name, std::move(ne), type, 0).pad().zeros(32);
  return b;
}

TEST(GgufBad, Magic) {
  SmallData d;
  std::vector<uint8_t> bytes = test::small_bytes(d);
  bytes[0] = 'X';
  parse_error(bytes, "offset 0: bad magic 58 47 55 46 (expected 'GGUF')");
  parse_error({'G', 'G'}, "offset 0: file too small for a GGUF header (2 bytes)");
  parse_error({}, "file too small for a GGUF header (0 bytes)");
}

TEST(GgufBad, Versions) {
  SmallData d;
  std::vector<uint8_t> bytes = test::small_bytes(d);
  auto with_version = [&](uint32_t v) {
    std::vector<uint8_t> b = bytes;
    std::memcpy(b.data() + 4, &v, 4);
    return b;
  };
  parse_error(with_version(0), "offset 4: version 0 is invalid");
  parse_error(with_version(1), "offset 4: version 1 is not supported");
  parse_error(with_version(4), "offset 4: version 4 is not supported (newest known is 3)");
  parse_error(with_version(0x03000000), "offset 4: version 0x03000000: endianness mismatch");
}

// Every prefix of a valid file fails cleanly until all tensor data is present; from there
// (only trailing padding is missing) it reads the same content.
TEST(GgufBad, TruncatedAtEveryByte) {
  SmallData d;
  const std::vector<uint8_t> bytes = test::small_bytes(d);
  Result<GgufFile> full = GgufFile::from_buffer(bytes);
  ASSERT_TRUE(full.ok()) << full.error();
  const GgufTensorInfo& last = full->tensors().back();
  const size_t data_end = static_cast<size_t>(full->data_offset() + last.offset + last.nbytes);
  ASSERT_LT(data_end, bytes.size());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    Result<GgufFile> r = GgufFile::from_buffer(prefix, "cut.gguf");
    if (n < data_end) {
      ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
      EXPECT_EQ(r.error().rfind("cut.gguf: offset ", 0), 0u) << r.error();
    } else {
      ASSERT_TRUE(r.ok()) << n << ": " << r.error();
      EXPECT_EQ(r->kvs(), full->kvs());
      EXPECT_EQ(r->tensors().size(), full->tensors().size());
    }
  }
  Bytes cut;  // short prefixes mostly fail the count bounds; this one ends inside a value
  cut.header(0, 1).str("abcdefgh").i32(kU64).zeros(2);
  EXPECT_EQ(parse_error(cut.b, "unexpected end of file"),
            "bad.gguf: offset 44: key 'abcdefgh': unexpected end of file reading value (need 8 bytes, 2 left)");
}

TEST(GgufBad, HugeStringLength) {
  Bytes b;
  b.header(0, 1).u64(uint64_t{1} << 62).zeros(16);
  EXPECT_EQ(parse_error(b.b, "exceeds the 1 GiB limit"),
            "bad.gguf: offset 24: key 0: key length 4611686018427387904 exceeds the 1 GiB limit");
  Bytes c;
  c.header(0, 1).str("k").i32(kString).u64(1000).zeros(3);
  parse_error(c.b, "offset 37: key 'k': value length 1000 exceeds the 3 bytes left");
}

TEST(GgufBad, HugeArrayCount) {
  Bytes b;
  b.header(0, 1).str("k").i32(kArray).i32(kU32).u64(uint64_t{1} << 40).zeros(8);
  parse_error(b.b, "offset 41: key 'k': array count 1099511627776 exceeds the limit 2^30");
  Bytes c;
  c.header(0, 1).str("k").i32(kArray).i32(kU32).u64(uint64_t{1} << 29).zeros(8);
  parse_error(c.b, "key 'k': array of 536870912 u32 needs at least 2147483648 bytes, 8 left");
  Bytes s;
  s.header(0, 1).str("k").i32(kArray).i32(kString).u64(1000).zeros(64);
  parse_error(s.b, "key 'k': array of 1000 string needs at least 8000 bytes, 64 left");
}

TEST(GgufBad, HugeCounts) {
  Bytes kv;
  kv.header(0, UINT64_MAX).zeros(64);
  parse_error(kv.b, "offset 16: n_kv 18446744073709551615 cannot fit in the 64 bytes left");
  Bytes t;
  t.header(uint64_t{1} << 60, 0).zeros(64);
  parse_error(t.b, "offset 8: n_tensors 1152921504606846976 cannot fit in the 64 bytes left");
}

TEST(GgufBad, DuplicateKey) {
  Bytes b;
  b.header(0, 2).kv_u32("a", 1).kv_u32("a", 2);
  parse_error(b.b, "offset 41: duplicate key 'a'");
}

TEST(GgufBad, EmptyKey) {
  Bytes b;
  b.header(0, 1).kv_u32("", 1);
  parse_error(b.b, "offset 24: key 0 is empty");
}

TEST(GgufBad, DuplicateTensorName) {
  Bytes b;
  b.header(2, 0).info("w", {8}, kF32, 0).info("w", {8}, kF32, 32).pad().zeros(64);
  parse_error(b.b, "duplicate tensor name 'w'");
}

TEST(GgufBad, MisalignedOffset) {
  Bytes b;
  b.header(2, 0).info("w", {4}, kF32, 0).info("v", {4}, kF32, 16).pad().zeros(64);
  parse_error(b.b, "tensor 'v': offset 16 is not a multiple of the alignment 32");
}

TEST(GgufBad, UnpackedAndOverlappingOffsets) {
  Bytes gap;
  gap.header(2, 0).info("w", {8}, kF32, 0).info("v", {8}, kF32, 64).pad().zeros(128);
  parse_error(gap.b, "tensor 'v': offset 64 is not the packed offset 32");
  Bytes overlap;
  overlap.header(2, 0).info("w", {8}, kF32, 0).info("v", {8}, kF32, 0).pad().zeros(64);
  parse_error(overlap.b, "tensor 'v': offset 0 is not the packed offset 32");
  Bytes swapped;  // data out of info order
  swapped.header(2, 0).info("w", {8}, kF32, 32).info("v", {8}, kF32, 0).pad().zeros(64);
  parse_error(swapped.b, "tensor 'w': offset 32 is not the packed offset 0");
}

TEST(GgufBad, ValueTypes) {
  Bytes t13;
  t13.header(0, 1).str("k").i32(13).u32(0);
  parse_error(t13.b, "offset 33: key 'k': invalid value type 13");
  Bytes neg;
  neg.header(0, 1).str("k").i32(-1).u32(0);
  parse_error(neg.b, "key 'k': invalid value type -1");
  Bytes elem;
  elem.header(0, 1).str("k").i32(kArray).i32(13).u64(0);
  parse_error(elem.b, "offset 37: key 'k': invalid array element type 13");
  Bytes nested;
  nested.header(0, 1).str("k").i32(kArray).i32(kArray).u64(1).i32(kU32).u64(0);
  parse_error(nested.b, "key 'k': nested arrays are not supported");
}

TEST(GgufBad, BoolNotZeroOrOne) {
  Bytes b;
  b.header(0, 1).str("k").i32(kBool).u8(2);
  EXPECT_EQ(parse_error(b.b, "bool value 2"), "bad.gguf: offset 37: key 'k': bool value 2 (expected 0 or 1)");
  Bytes a;
  a.header(0, 1).str("k").i32(kArray).i32(kBool).u64(3).u8(1).u8(2).u8(0);
  parse_error(a.b, "offset 50: key 'k': bool element 1 is 2 (expected 0 or 1)");
}

TEST(GgufBad, TooManyDims) { parse_error(one_tensor({1, 1, 1, 1, 1}).b, "offset 33: tensor 'w': n_dims 5 exceeds 4"); }

TEST(GgufBad, ShapeOverflowAndNegative) {
  parse_error(one_tensor({int64_t{1} << 32, int64_t{1} << 32}).b,
              "tensor 'w': element count [4294967296, "
              "4294967296, 1, 1] overflows int64");
  parse_error(one_tensor({8, -1}).b, "tensor 'w': ne[1] = -1 is negative");
  // Fits int64 elements but not bytes: f64 (8 bytes each).
  parse_error(one_tensor({int64_t{1} << 62}, 28).b, "byte size of 4611686018427387904 blocks of f64 overflows");
}

TEST(GgufBad, NameTooLong) {
  parse_error(one_tensor({8}, kF32, std::string(64, 'n')).b,
              "offset 24: tensor name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...' is "
              "64 bytes (limit 63)");
  Result<GgufFile> ok = GgufFile::from_buffer(one_tensor({8}, kF32, std::string(63, 'n')).b);
  EXPECT_TRUE(ok.ok()) << ok.error();
}

TEST(GgufBad, Alignment) {
  Bytes b48;
  b48.header(0, 1).kv_u32("general.alignment", 48);
  parse_error(b48.b, "offset 24: general.alignment 48 is not a power of two");
  Bytes b0;
  b0.header(0, 1).kv_u32("general.alignment", 0);
  parse_error(b0.b, "general.alignment 0 is not a power of two");
  Bytes u64;
  u64.header(0, 1).str("general.alignment").i32(kU64).u64(64);
  parse_error(u64.b, "general.alignment has type u64, expected u32");
}

TEST(GgufBad, DataPastEndOfFile) {
  Bytes b;
  b.header(1, 0).info("w", {8}, kF32, 0).pad().zeros(16);
  EXPECT_EQ(parse_error(b.b, "exceeds file size"),
            "bad.gguf: offset 24: tensor 'w': data [64, 96) exceeds file size 80");
  Bytes none;  // infos end the file: the data section would start past it
  none.header(1, 0).info("w", {8}, kF32, 0);
  parse_error(none.b, "data section starts at 64, past the file size 57");
}

TEST(GgufBad, UnknownTensorTypes) {
  parse_error(one_tensor({8}, 99).b, "offset 45: tensor 'w': unknown or retired ggml type 99");
  parse_error(one_tensor({8}, 4).b, "tensor 'w': unknown or retired ggml type 4");
  parse_error(one_tensor({8}, -1).b, "tensor 'w': unknown or retired ggml type -1");
}

TEST(GgufBad, RowNotMultipleOfBlock) {
  parse_error(one_tensor({33}, kQ8_0).b, "tensor 'w': ne[0] = 33 is not a multiple of the q8_0 block size 32");
}

TEST(GgufBad, ErrorsNameTheFileOnDisk) {
  SmallData d;
  std::vector<uint8_t> bytes = test::small_bytes(d);
  bytes[1] = 0;
  const std::string p = test::tmp_path("magic.gguf");
  test::write_file(p, bytes);
  Result<GgufFile> r = GgufFile::open(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), p + ": offset 0: bad magic 47 00 55 46 (expected 'GGUF')");
}

}  // namespace
}  // namespace gl
