// synth_load_test.cpp - a synthetic model built in memory (gguf-tools SynthModel + the
// Model::load(layout, source) entry) is byte for byte the file gguf-synth writes, and runs to
// the same logits as that file on the CPU backend and through the device (staging) path.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/restricted_backend.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/runner.h"
#include "gguf-tools/synth.h"

namespace gl::test {
namespace {

using Param = std::tuple<std::string, DType>;  // preset, file type

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string n = std::get<0>(info.param) + "_" + std::string(dtype_name(std::get<1>(info.param)));
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

qwen35::Model::TensorSource source_of(const tools::SynthModel& s) {
  return [&s](const GgufTensorInfo& t, void* dst) { return s.fill(t, dst); };
}

// Logits of every row of a short prompt, from a fresh runner.
std::vector<float> prompt_logits(const qwen35::Model& m, Backend& be) {
  const std::vector<int32_t> prompt = {1, 17, 300, 42, 7, 511, 256, 3};
  const std::vector<int32_t> rows = {0, 3, 7};
  qwen35::Runner r(m, be, 64, 32);
  auto l = r.eval(prompt, rows);
  EXPECT_TRUE(l.ok()) << l.error();
  return l.ok() ? *l : std::vector<float>{};
}

class SynthLoadTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const auto& [preset, type] = GetParam();
    const std::filesystem::path dir = std::filesystem::path(GL_BINARY_DIR) / "test-models";
    std::filesystem::create_directories(dir);
    path_ = (dir / ("synth-" + param_name({GetParam(), 0}) + ".gguf")).string();
    const tools::SynthOptions opt{.preset = preset, .type = type, .seed = 11, .output = path_};
    Result<tools::SynthReport> w = tools::synth_model(opt);
    ASSERT_TRUE(w.ok()) << w.error();
    Result<GgufFile> f = GgufFile::open(path_);
    ASSERT_TRUE(f.ok()) << f.error();
    file_ = std::move(*f);
    Result<tools::SynthModel> s = tools::SynthModel::create(opt);
    ASSERT_TRUE(s.ok()) << s.error();
    synth_ = std::make_unique<tools::SynthModel>(std::move(*s));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string path_;
  GgufFile file_;
  std::unique_ptr<tools::SynthModel> synth_;
};

// Same KVs, same tensor infos, and every tensor's bytes equal the file's.
TEST_P(SynthLoadTest, BytesEqualTheWrittenFile) {
  const GgufFile& layout = synth_->layout();
  EXPECT_EQ(layout.kvs(), file_.kvs());
  ASSERT_EQ(layout.tensors().size(), file_.tensors().size());
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < layout.tensors().size(); ++i) {
    const GgufTensorInfo& want = file_.tensors()[i];
    const GgufTensorInfo& got = layout.tensors()[i];
    ASSERT_EQ(got.name, want.name);
    ASSERT_EQ(got.ggml_type, want.ggml_type) << got.name;
    ASSERT_EQ(got.ne, want.ne) << got.name;
    ASSERT_EQ(got.offset, want.offset) << got.name;
    ASSERT_EQ(got.nbytes, want.nbytes) << got.name;
    bytes.assign(got.nbytes, 0xAB);
    ASSERT_TRUE(synth_->fill(got, bytes.data()).ok()) << got.name;
    EXPECT_EQ(std::memcmp(bytes.data(), want.data, want.nbytes), 0) << got.name;
  }
}

// The model loaded from the file and from memory (host in place, and a device-like backend
// through the staging buffer) gives bit-identical logits.
TEST_P(SynthLoadTest, LogitsEqualTheFileModel) {
  auto cpu = cpu::make_backend({.n_threads = 2});
  auto from_file = qwen35::Model::load(path_, *cpu);
  ASSERT_TRUE(from_file.ok()) << from_file.error();
  uint64_t done = 0, total = 0;
  auto from_mem = qwen35::Model::load(synth_->layout(), source_of(*synth_), *cpu, [&](uint64_t d, uint64_t t) {
    EXPECT_GE(d, done);
    done = d, total = t;
  });
  ASSERT_TRUE(from_mem.ok()) << from_mem.error();
  EXPECT_GT(total, 0u);
  EXPECT_EQ(done, total);

  const std::vector<float> want = prompt_logits(**from_file, *cpu);
  ASSERT_FALSE(want.empty());
  const std::vector<float> got = prompt_logits(**from_mem, *cpu);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);

  RestrictedBackend dev(cpu::make_backend({.n_threads = 2}), {}, /*host=*/false);
  auto on_dev = qwen35::Model::load(synth_->layout(), source_of(*synth_), dev);
  ASSERT_TRUE(on_dev.ok()) << on_dev.error();
  const std::vector<float> dev_logits = prompt_logits(**on_dev, dev);
  ASSERT_EQ(dev_logits.size(), want.size());
  EXPECT_EQ(std::memcmp(dev_logits.data(), want.data(), want.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Presets, SynthLoadTest,
                         ::testing::Combine(::testing::Values("tiny", "tiny-moe"),
                                            ::testing::Values(DType::F32, DType::BF16, DType::Q8_0)),
                         param_name);

// A device backend with no memory left: the error names the model, the size and the backend.
class NoMemoryBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake-gpu"; }
  bool is_host() const override { return false; }
  size_t alignment() const override { return 256; }
  std::unique_ptr<Buffer> alloc_buffer(size_t, BufferUsage) override { return nullptr; }
  bool supports(const Tensor&) const override { return false; }
  void set_tensor(Tensor&, const void*, size_t, size_t) override { GL_ASSERT(false, "no buffer to write"); }
  void get_tensor(const Tensor&, void*, size_t, size_t) override { GL_ASSERT(false, "no buffer to read"); }
  Status compute(std::span<Tensor* const>) override { return Error("fake-gpu computes nothing"); }
  Status synchronize() override { return {}; }
};

TEST(SynthLoad, OutOfDeviceMemoryIsAClearError) {
  Result<tools::SynthModel> s = tools::SynthModel::create({.preset = "tiny", .type = DType::BF16});
  ASSERT_TRUE(s.ok()) << s.error();
  NoMemoryBackend gpu;
  auto m = qwen35::Model::load(s->layout(), source_of(*s), gpu);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("tiny (in memory): out of device memory: weights need 0."), std::string::npos) << m.error();
  EXPECT_NE(m.error().find("GiB on fake-gpu"), std::string::npos) << m.error();
}

// The tiny presets stay under the threshold where fill() goes parallel; a real-size tensor
// does not, and its rows equal the serial definition (synth_value, then from_float per row).
TEST(SynthLoad, ParallelFillOfALargeTensorMatchesSerialValues) {
  const tools::SynthOptions opt{.preset = "qwen35-0.8b", .type = DType::Q8_0, .seed = 5};
  Result<tools::SynthModel> s = tools::SynthModel::create(opt);
  ASSERT_TRUE(s.ok()) << s.error();
  const GgufTensorInfo* t = s->layout().find_tensor("blk.0.ffn_up.weight");
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> got(t->nbytes);
  ASSERT_TRUE(s->fill(*t, got.data()).ok());

  tools::TensorSpec spec;
  for (const tools::TensorSpec& x : tools::tensor_specs(tools::find_preset(opt.preset)->dims))
    if (x.name == t->name) spec = x;
  const int64_t ne0 = t->ne[0];
  const size_t rb = row_bytes(DType::Q8_0, ne0);
  std::vector<float> row(static_cast<size_t>(ne0));
  std::vector<uint8_t> want(rb);
  for (int64_t r = 0; r < t->ne[1]; ++r) {
    for (int64_t i = 0; i < ne0; ++i) row[static_cast<size_t>(i)] = tools::synth_value(opt.seed, spec, r * ne0 + i);
    from_float(DType::Q8_0, row.data(), want.data(), ne0);
    ASSERT_EQ(std::memcmp(got.data() + static_cast<size_t>(r) * rb, want.data(), rb), 0) << "row " << r;
  }
}

TEST(SynthLoad, SourceErrorsAndUnknownTensorsAreReported) {
  Result<tools::SynthModel> s = tools::SynthModel::create({.preset = "tiny-moe", .type = DType::Q8_0});
  ASSERT_TRUE(s.ok()) << s.error();
  GgufTensorInfo bogus = s->layout().tensors()[0];
  bogus.name = "blk.99.nothing.weight";
  std::vector<uint8_t> bytes(bogus.nbytes);
  Status st = s->fill(bogus, bytes.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("no tensor named 'blk.99.nothing.weight'"), std::string::npos) << st.error();

  auto cpu = cpu::make_backend({.n_threads = 1});
  auto m = qwen35::Model::load(
      s->layout(), [](const GgufTensorInfo& t, void*) -> Status { return Error("cannot read " + t.name); }, *cpu);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "cannot read token_embd.weight");
}

}  // namespace
}  // namespace gl::test
