// graph-dump - prints a graph as text, Graphviz DOT or JSON.
//
//   graph-dump -m model.gguf --step prefill -n 64 -f dot -o prefill.dot   # a model step graph
//   graph-dump -m model.gguf --step verify --draft 3                      # verify of K+1 rows
//   graph-dump --format dot -o block.dot && dot -Tsvg block.dot > block.svg
//   graph-dump --plan                     # with backends and arena offsets
//
// With -m it builds a Qwen3.5 step graph from the GGUF's metadata without reading weight data.
// Without -m it dumps a built-in example: one transformer-style block (rms_norm, q/k/v
// projections, rope, causal softmax attention with grouped KV heads, swiglu FFN).
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
#include "ggml-lite/models/qwen35.h"
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
  // scores [T_kv, T_q, H]; query head h reads kv head h / (H / Hkv) (mul_mat batch broadcast)
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

struct ModelStep {
  std::unique_ptr<gl::qwen35::Model> model;
  std::unique_ptr<gl::Backend> cpu;
  std::unique_ptr<gl::qwen35::Cache> cache;
  gl::qwen35::StepGraph step;
};

// A Qwen3.5 step graph from GGUF metadata; weights stay unread.
gl::Result<ModelStep> model_step(const std::string& path, const std::string& kind, int n_tokens, int n_draft,
                                 int n_ctx) {
  auto m = gl::qwen35::Model::load_meta(path);
  if (!m) return gl::Error(m.error());
  ModelStep ms;
  ms.model = std::move(*m);
  ms.cpu = gl::cpu::make_backend({.n_threads = 1});
  ms.cache = std::make_unique<gl::qwen35::Cache>(*ms.model, n_ctx, *ms.cpu);
  gl::qwen35::StepShape sh;
  if (kind == "prefill") {
    sh = {.n_tokens = n_tokens, .n_kv = n_ctx, .n_outputs = 1};
  } else if (kind == "decode") {
    sh = {.n_tokens = 1, .n_kv = n_ctx, .n_outputs = 1};
  } else {
    sh = {.n_tokens = n_draft + 1, .n_kv = n_ctx, .n_outputs = n_draft + 1, .n_states = n_draft + 1};
  }
  if (sh.n_tokens < 1 || sh.n_tokens > n_ctx)
    return gl::Error(fmt::format("--tokens/--draft give {} tokens, outside [1, --ctx {}]", sh.n_tokens, n_ctx));
  ms.step = gl::qwen35::build_step(*ms.model, *ms.cache, sh);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "graph-dump: print a ggml-lite graph as text, Graphviz DOT or JSON.\n"
      "With -m it dumps a step graph of a Qwen3.5 GGUF (prefill, decode or verify) from its metadata\n"
      "alone; without -m, a built-in example graph: one small transformer block."};
  std::string format = "text";
  std::string out_path;
  bool plan = false;
  app.add_option("-f,--format", format, "output format")->check(CLI::IsMember({"text", "dot", "json"}));
  app.add_option("-o,--output", out_path, "write to FILE (atomically) instead of stdout");
  app.add_flag("--plan", plan, "schedule on the CPU backend, plan memory, show arena offsets and peak vs naive bytes");
  std::string model_path, step_kind = "prefill";
  int n_tokens = 64, n_draft = 3, n_ctx = 256;
  app.add_option("-m,--model", model_path, "Qwen3.5 GGUF: dump one of its step graphs (weights are not read)")
      ->check(CLI::ExistingFile);
  app.add_option("--step", step_kind, "step graph to dump with -m")
      ->check(CLI::IsMember({"prefill", "decode", "verify"}));
  app.add_option("-n,--tokens", n_tokens, "prompt tokens of the prefill step")->check(CLI::PositiveNumber);
  app.add_option("--draft", n_draft, "draft tokens K of the verify step (K+1 rows)")->check(CLI::NonNegativeNumber);
  app.add_option("--ctx", n_ctx, "KV cache span of the step")->check(CLI::PositiveNumber);
  app.footer(
      "Examples:\n  graph-dump -m model.gguf --step prefill -n 64 -f dot -o prefill.dot\n"
      "  graph-dump -m model.gguf --step verify --draft 3\n  graph-dump --plan");
  CLI11_PARSE(app, argc, argv);

  gl::Context ctx;
  ModelStep ms;
  gl::Graph g;
  if (!model_path.empty()) {
    auto r = model_step(model_path, step_kind, n_tokens, n_draft, n_ctx);
    if (!r) {
      fmt::print(stderr, "graph-dump: {}\n", r.error());
      return 1;
    }
    ms = std::move(*r);
    g = ms.step.graph;
  } else {
    g = gl::Graph::build({build_block(ctx, BlockShape{})});
  }

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
