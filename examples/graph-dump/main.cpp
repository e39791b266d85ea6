// graph-dump - prints a graph as text, Graphviz DOT or JSON.
//
//   graph-dump --format dot -o block.dot && dot -Tsvg block.dot > block.svg
//   graph-dump --plan                     # with backends and arena offsets
//
// Until model definitions exist this dumps a built-in example: one
// transformer-style block (rms_norm, q/k/v projections, rope, causal softmax
// attention with grouped KV heads, swiglu FFN), built only from ops.h.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ggml-lite/context.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/dump.h"
#include "ggml-lite/graph.h"
#include "ggml-lite/planner.h"
#include "ggml-lite/scheduler.h"

namespace {

struct BlockShape {
  int64_t n_embd = 64;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 16;
  int64_t n_ff = 128;
  int64_t n_tokens = 8;
};

gl::Tensor* weight(gl::Context& ctx, std::initializer_list<int64_t> ne, const char* name) {
  gl::Tensor* t = ctx.new_tensor(gl::DType::F32, ne, name);
  t->flags |= gl::TENSOR_WEIGHT;
  return t;
}

// Causal self-attention over xn [n_embd, T]; returns [n_embd, T].
gl::Tensor* attention(gl::Context& ctx, const BlockShape& s, gl::Tensor* xn, gl::Tensor* pos) {
  const int64_t D = s.head_dim, H = s.n_head, Hkv = s.n_head_kv, T = s.n_tokens;
  gl::Tensor* q = gl::mul_mat(ctx, weight(ctx, {s.n_embd, D * H}, "attn_q.weight"), xn);
  gl::Tensor* k = gl::mul_mat(ctx, weight(ctx, {s.n_embd, D * Hkv}, "attn_k.weight"), xn);
  gl::Tensor* v = gl::mul_mat(ctx, weight(ctx, {s.n_embd, D * Hkv}, "attn_v.weight"), xn);
  q = gl::rope(ctx, gl::reshape(ctx, q, {D, H, T}), pos, static_cast<int>(D), 10000.0f, gl::RopeMode::NEOX);
  k = gl::rope(ctx, gl::reshape(ctx, k, {D, Hkv, T}), pos, static_cast<int>(D), 10000.0f, gl::RopeMode::NEOX);
  gl::set_name(q, "q_rope");
  gl::set_name(k, "k_rope");
  q = gl::permute(ctx, q, 0, 2, 1, 3);  // [D, T, H]
  k = gl::permute(ctx, k, 0, 2, 1, 3);  // [D, T, Hkv]
  // scores [T_kv, T_q, H]; query head h reads kv head h % Hkv (broadcast over heads)
  gl::Tensor* kq = gl::mul_mat(ctx, k, q);
  kq = gl::set_name(gl::softmax(ctx, kq, nullptr, 1.0f / std::sqrt(static_cast<float>(D)), true), "kq_soft");
  // v as [T, D, Hkv] so that mul_mat contracts over tokens
  gl::Tensor* vt = gl::cont(ctx, gl::permute(ctx, gl::reshape(ctx, v, {D, Hkv, T}), 1, 2, 0, 3));
  gl::Tensor* kqv = gl::mul_mat(ctx, vt, kq);              // [D, T, H]
  kqv = gl::cont(ctx, gl::permute(ctx, kqv, 0, 2, 1, 3));  // [D, H, T]
  kqv = gl::reshape(ctx, kqv, {D * H, T});
  return gl::set_name(gl::mul_mat(ctx, weight(ctx, {D * H, s.n_embd}, "attn_output.weight"), kqv), "attn_out");
}

gl::Tensor* ffn(gl::Context& ctx, const BlockShape& s, gl::Tensor* xn) {
  gl::Tensor* gate = gl::mul_mat(ctx, weight(ctx, {s.n_embd, s.n_ff}, "ffn_gate.weight"), xn);
  gl::Tensor* up = gl::mul_mat(ctx, weight(ctx, {s.n_embd, s.n_ff}, "ffn_up.weight"), xn);
  gl::Tensor* act = gl::set_name(gl::swiglu(ctx, gate, up), "ffn_act");
  return gl::set_name(gl::mul_mat(ctx, weight(ctx, {s.n_ff, s.n_embd}, "ffn_down.weight"), act), "ffn_out");
}

// One pre-norm block: h = x + attn(norm(x)); out = h + ffn(norm(h)).
gl::Tensor* build_block(gl::Context& ctx, const BlockShape& s) {
  gl::Tensor* x = ctx.new_tensor(gl::DType::F32, {s.n_embd, s.n_tokens}, "inp_embd");
  x->flags |= gl::TENSOR_INPUT;
  gl::Tensor* pos = ctx.new_tensor(gl::DType::I32, {s.n_tokens}, "inp_pos");
  pos->flags |= gl::TENSOR_INPUT;

  gl::Tensor* xn = gl::mul(ctx, gl::rms_norm(ctx, x, 1e-6f), weight(ctx, {s.n_embd}, "attn_norm.weight"));
  gl::Tensor* h = gl::set_name(gl::add(ctx, attention(ctx, s, gl::set_name(xn, "attn_norm"), pos), x), "ffn_inp");
  gl::Tensor* hn = gl::mul(ctx, gl::rms_norm(ctx, h, 1e-6f), weight(ctx, {s.n_embd}, "ffn_norm.weight"));
  return gl::set_name(gl::add(ctx, ffn(ctx, s, gl::set_name(hn, "ffn_norm")), h), "l_out");
}

// Writes text to path via path.tmp + rename, so a failed run never leaves a partial file.
bool write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "graph-dump: print a ggml-lite graph as text, Graphviz DOT or JSON.\n"
      "Until model definitions exist, it dumps a built-in example graph: one small\n"
      "transformer block (rms_norm, q/k/v mul_mat, rope, causal softmax attention, swiglu FFN)."};
  std::string format = "text";
  std::string out_path;
  bool plan = false;
  app.add_option("-f,--format", format, "output format")->check(CLI::IsMember({"text", "dot", "json"}));
  app.add_option("-o,--output", out_path, "write to FILE (atomically) instead of stdout");
  app.add_flag("--plan", plan, "schedule on the CPU backend, plan memory, show arena offsets and peak vs naive bytes");
  CLI11_PARSE(app, argc, argv);

  gl::Context ctx;
  gl::Graph g = gl::Graph::build({build_block(ctx, BlockShape{})});

  std::unique_ptr<gl::Backend> cpu;
  std::unique_ptr<gl::Buffer> arena;  // outlives the dump: tensors point into it
  std::vector<gl::Backend*> backends;
  gl::DumpOptions opt;
  opt.show_offsets = plan;
  if (plan) {
    cpu = gl::cpu::make_backend({.n_threads = 1});
    backends = {cpu.get()};
    gl::Scheduler sched(backends);
    sched.schedule(g);
    gl::MemoryPlan mp = gl::plan_memory(g, cpu->alignment());
    arena = cpu->alloc_buffer(mp.arena_bytes, gl::BufferUsage::COMPUTE);
    if (!arena) {
      fmt::print(stderr, "graph-dump: could not allocate a {} byte arena\n", mp.arena_bytes);
      return 1;
    }
    gl::bind_plan(g, mp, *arena);
    opt.backends = backends;
    fmt::print(stderr, "memory plan: peak {} B, naive {} B ({:.1f}% of naive), {} in-place nodes\n", mp.arena_bytes,
               mp.naive_bytes, 100.0 * static_cast<double>(mp.arena_bytes) / static_cast<double>(mp.naive_bytes),
               mp.n_inplace);
  }

  std::ostringstream text;
  if (format == "dot") {
    gl::dump_dot(g, text, opt);
  } else if (format == "json") {
    gl::dump_json(g, text, opt);
  } else {
    gl::dump_text(g, text, opt);
  }
  if (out_path.empty()) {
    std::cout << text.str();
    return std::cout.good() ? 0 : 1;
  }
  if (!write_atomically(out_path, text.str())) {
    fmt::print(stderr, "graph-dump: could not write {}\n", out_path);
    return 1;
  }
  return 0;
}
