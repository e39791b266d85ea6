// GgufWriter: streaming, chunking, and cleanup of the temp file on every failure.
#include <filesystem>

#include "ggml-lite/gguf.h"
#include "test_util.h"

namespace gl {
namespace {

namespace fs = std::filesystem;
using test::SmallData;

std::span<const uint8_t> as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

// The metadata of small_file with no data pointers, as a 70 GB synth would pass it.
GgufFile meta_only(const SmallData& d) {
  GgufFile m = test::small_file(d);
  for (const GgufTensorInfo& t : std::vector<GgufTensorInfo>(m.tensors()))
    EXPECT_TRUE(m.set_tensor_data(t.name, nullptr).ok());
  return m;
}

TEST(GgufWriter, StreamsChunksToTheSameBytes) {
  SmallData d;
  const std::string p = test::tmp_path("s.gguf");
  GgufWriter w(p);
  ASSERT_TRUE(w.begin(meta_only(d)).ok());
  EXPECT_TRUE(fs::exists(w.temp_path()));
  EXPECT_FALSE(fs::exists(p));
  const auto* a = reinterpret_cast<const uint8_t*>(d.a.data());
  ASSERT_TRUE(w.write_tensor_data(0, {a, 5}).ok());
  ASSERT_TRUE(w.write_tensor_data(0, {a + 5, 27}).ok());
  ASSERT_TRUE(w.write_tensor_data(1, as_bytes(d.b.data(), 6)).ok());
  ASSERT_TRUE(w.write_tensor_data(2, d.q).ok());
  ASSERT_TRUE(w.finish().ok());
  EXPECT_FALSE(fs::exists(w.temp_path()));
  EXPECT_EQ(test::read_file(p), test::small_bytes(d));
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST(GgufWriter, ReplacesAnExistingFileOnlyOnFinish) {
  SmallData d;
  const std::string p = test::tmp_path("r.gguf");
  test::write_file(p, std::string_view("old"));
  GgufWriter w(p);
  ASSERT_TRUE(w.begin(meta_only(d)).ok());
  EXPECT_EQ(test::read_file(p).size(), 3u);
  ASSERT_TRUE(w.write_tensor_data(0, as_bytes(d.a.data(), 32)).ok());
  ASSERT_TRUE(w.write_tensor_data(1, as_bytes(d.b.data(), 6)).ok());
  ASSERT_TRUE(w.write_tensor_data(2, d.q).ok());
  ASSERT_TRUE(w.finish().ok());
  EXPECT_EQ(test::read_file(p), test::small_bytes(d));
}

TEST(GgufWriter, OutOfOrderWriteFailsAndRemovesTemp) {
  SmallData d;
  const std::string p = test::tmp_path("o.gguf");
  GgufWriter w(p);
  ASSERT_TRUE(w.begin(meta_only(d)).ok());
  Status s = w.write_tensor_data(1, as_bytes(d.b.data(), 6));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("tensor 'b' written before tensor 'a' is complete (0 of 32 bytes)"), std::string::npos)
      << s.error();
  EXPECT_FALSE(fs::exists(w.temp_path()));
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(w.finish().ok());
}

TEST(GgufWriter, TooManyBytesFail) {
  SmallData d;
  GgufWriter w(test::tmp_path("t.gguf"));
  ASSERT_TRUE(w.begin(meta_only(d)).ok());
  std::vector<uint8_t> big(33, 0);
  Status s = w.write_tensor_data(0, big);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("tensor 'a': 33 more bytes exceed its size 32"), std::string::npos) << s.error();
  EXPECT_FALSE(fs::exists(w.temp_path()));
}

TEST(GgufWriter, IncompleteFinishFailsAndRemovesTemp) {
  SmallData d;
  const std::string p = test::tmp_path("i.gguf");
  GgufWriter w(p);
  ASSERT_TRUE(w.begin(meta_only(d)).ok());
  ASSERT_TRUE(w.write_tensor_data(0, as_bytes(d.a.data(), 32)).ok());
  Status s = w.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("tensor 'b' is incomplete (0 of 6 bytes written)"), std::string::npos) << s.error();
  EXPECT_FALSE(fs::exists(w.temp_path()));
  EXPECT_FALSE(fs::exists(p));
}

TEST(GgufWriter, DestructorWithoutFinishRemovesTemp) {
  SmallData d;
  const std::string p = test::tmp_path("x.gguf");
  std::string tmp;
  {
    GgufWriter w(p);
    ASSERT_TRUE(w.begin(meta_only(d)).ok());
    tmp = w.temp_path();
    EXPECT_TRUE(fs::exists(tmp));
  }
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(p));
}

TEST(GgufWriter, BadAlignmentFailsBeforeCreatingAnything) {
  SmallData d;
  GgufFile m = meta_only(d);
  m.set("general.alignment", uint32_t{48});
  const std::string p = test::tmp_path("a.gguf");
  GgufWriter w(p);
  Status s = w.begin(m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("general.alignment 48 is not a power of two"), std::string::npos) << s.error();
  m.set("general.alignment", uint64_t{64});
  EXPECT_NE(GgufWriter(p).begin(m).error().find("general.alignment has type u64, expected u32"), std::string::npos);
  for (const auto& e : fs::directory_iterator(fs::path(p).parent_path()))
    EXPECT_NE(e.path().string().rfind(p, 0), 0u) << "left behind: " << e.path();
}

TEST(GgufWriter, WriteWithoutDataFails) {
  SmallData d;
  Status s = meta_only(d).write(test::tmp_path("n.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("tensor 'a' has no data"), std::string::npos);
}

TEST(GgufWriter, UnwritableDirectoryFails) {
  SmallData d;
  Status s = test::small_file(d).write("/nonexistent-dir-for-gguf-test/x.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("cannot create"), std::string::npos) << s.error();
}

}  // namespace
}  // namespace gl
