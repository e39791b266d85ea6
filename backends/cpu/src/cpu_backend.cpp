// cpu_backend.cpp - the CPU reference backend: host buffers and the op dispatch.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ggml-lite/cpu.h"
#include "ops/dtype_kernels.h"
#include "ops/kernels.h"
#include "ops/team.h"
#include "profile.h"

namespace gl::cpu {
namespace {

constexpr size_t kAlignment = 64;

class HostBuffer final : public Buffer {
 public:
  HostBuffer(Backend& be, size_t bytes, BufferUsage u) : backend_(be), size_(bytes) {
    usage = u;
    const size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    data_ = std::aligned_alloc(kAlignment, padded ? padded : kAlignment);
    GL_ASSERT(data_ != nullptr, "host allocation failed");
  }
  ~HostBuffer() override { std::free(data_); }
  void* base() override { return data_; }
  size_t size() const override { return size_; }
  Backend& backend() override { return backend_; }

 private:
  Backend& backend_;
  void* data_;
  size_t size_;
};

// The one dispatch switch: no default, so a new op fails to compile here. The matrix products
// (int8 activations for quantized weights, matmul.cpp) and the fused attention have FAST paths.
void compute_node(Tensor& node, Precision precision) {
  switch (node.op) {
    case Op::NONE:
    case Op::VIEW:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::TRANSPOSE: return;
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV: binary(node); return;
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP: unary(node); return;
    case Op::SWIGLU: swiglu(node); return;
    case Op::RMS_NORM:
    case Op::L2_NORM: norm(node); return;
    case Op::MUL_MAT: mul_mat(node, precision); return;
    case Op::MUL_MAT_ID: mul_mat_id(node, precision); return;
    case Op::SOFTMAX: softmax(node); return;
    case Op::FLASH_ATTN: flash_attn(node, precision); return;
    case Op::ROPE: rope(node); return;
    case Op::GET_ROWS: get_rows(node); return;
    case Op::SET_ROWS: set_rows(node); return;
    case Op::CONCAT: concat(node); return;
    case Op::CONT:
    case Op::CPY: copy(node); return;
    case Op::ARGMAX: argmax(node); return;
    case Op::TOP_K: top_k(node); return;
    case Op::SUM_ROWS: sum_rows(node); return;
    case Op::SSM_CONV: ssm_conv(node); return;
    case Op::GATED_DELTA_RULE: gated_delta_rule(node); return;
  }
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const Options& opt)
      : team_(opt.n_threads > 0 ? opt.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
  }
  std::string_view name() const override { return "cpu"; }
  bool is_host() const override { return true; }
  size_t alignment() const override { return kAlignment; }
  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) override {
    return std::make_unique<HostBuffer>(*this, bytes, usage);
  }
  bool supports(const Tensor& node) const override { return supports_node(node); }
  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
    std::memcpy(static_cast<char*>(t.data) + off, src, n);
  }
  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override {
    std::memcpy(dst, static_cast<const char*>(t.data) + off, n);
  }
  void copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n) override {
    std::memmove(static_cast<char*>(dst.data) + dst_off, static_cast<const char*>(src.data) + src_off, n);
  }
  Status compute(std::span<Tensor* const> nodes) override {
    Team::Bind bind(team_);  // the kernels' parallel_for() splits over it
    for (Tensor* node : nodes) {
      if (!node->data && node->op != Op::NONE && !is_view_op(node->op))
        return Error("cpu: node '" + node->name + "' (" + std::string(op_name(node->op)) + ") has no memory");
      const auto t0 = profile_.start();
      compute_node(*node, precision_);
      profile_.stop(*node, t0);
    }
    return {};
  }
  Status synchronize() override { return {}; }
  void set_precision(Precision p) override { precision_ = p; }
  Precision precision() const override { return precision_; }

 private:
  Team team_;
  Profile profile_;
  Precision precision_ = Precision::EXACT;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const Options& opt) { return std::make_unique<CpuBackend>(opt); }

}  // namespace gl::cpu
