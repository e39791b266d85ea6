// qwen35 - generate text with a Qwen3.5 GGUF, optionally with MTP speculative decoding.
//
//   qwen35                                   # the embedded default model, MTP on
//   qwen35 -m model.gguf -p "Hello" -n 128 --mtp 3 --temp 0.7 --top-p 0.9 --seed 1
//   qwen35 -m model.gguf --dump-graph verify --mtp 3 > verify.txt
//
// Streams text as it is generated, then prints prefill and decode speed and, with --mtp, the
// acceptance per draft position, the mean accepted length and where the time went.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "ggml-lite/cpu.h"
#ifdef GL_HAVE_CUDA
#include "ggml-lite/cuda.h"
#endif
#include "ggml-lite/dump.h"
#ifdef GL_HAVE_VULKAN
#include "ggml-lite/vulkan.h"
#endif
#include "ggml-lite/models/session.h"
#include "ggml-lite/models/tokenizer.h"
#include "report.h"

namespace {

struct Args {
  std::string model = GL_DEFAULT_MODEL;
  std::string prompt = "First Citizen:\nBefore we proceed any further, hear me speak.\n";
  int n_predict = 128;
  int mtp = -1;  // -1: on when the model has MTP tensors (K = 1 on the CPU, else 2)
  int threads = 0;
  int ctx = 4096;
  int batch = 256;
  std::string backend = "auto";
  std::string dump_graph;
  bool ignore_eos = false;
  gl::SamplerParams sampling;
  std::optional<gl::Precision> precision;  // --precision auto (nullopt): the model's default_precision()
  std::optional<gl::DType> kv_type;        // --kv-type auto (nullopt): default_kv_type(precision)
  float mtp_p_min = 0.0f;
};

void add_options(CLI::App& app, Args& a) {
  app.add_option("-m,--model", a.model, "Qwen3.5 GGUF (default: the embedded tiny Shakespeare model)");
  app.add_option("-p,--prompt", a.prompt, "prompt text");
  app.add_option("-n,--n-predict", a.n_predict, "tokens to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--temp", a.sampling.temperature, "temperature (0 = greedy)")->check(CLI::NonNegativeNumber);
  app.add_option("--top-k", a.sampling.top_k, "keep the k most likely tokens (0 = off)")->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", a.sampling.top_p, "nucleus sampling mass (1 = off)")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", a.sampling.min_p, "drop tokens below min-p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", a.sampling.seed, "sampling seed");
  app.add_option("--mtp", a.mtp,
                 "MTP draft tokens per round (0 = off; default when the model has MTP: 1 on the CPU, else 2)")
      ->check(CLI::Range(0, 16));
  app.add_option("--mtp-p-min", a.mtp_p_min,
                 "adaptive K: a round stops drafting when its drafts' probability falls below this (0 = off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("-t,--threads", a.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  app.add_option("-c,--ctx", a.ctx, "context size")->check(CLI::PositiveNumber);
  app.add_option("-b,--batch", a.batch, "prefill chunk size")->check(CLI::PositiveNumber);
  app.add_option_function<std::string>(
         "--precision", [&a](const std::string& name) { a.precision = gl::precision_from_name(name); },
         "auto (default: fast for quantized files, as llama.cpp runs them; exact for f32/f16/bf16), exact "
         "(float activations; CUDA: two GEMMs per 16-bit matmul) or fast (int8 activations for quantized "
         "weights, one rounded GEMM)")
      ->check(CLI::IsMember({"auto", "exact", "fast"}));
  app.add_option_function<std::string>(
         "--kv-type", [&a](const std::string& name) { a.kv_type = gl::dtype_from_name(name); },
         "K/V cache rows: auto (default: f16 under --precision fast, as llama.cpp's default cache; f32 "
         "under exact), f32 (exact) or f16 (half the bytes; K and V rounded to f16)")
      ->check(CLI::IsMember({"auto", "f32", "f16"}));
  app.add_option("--backend", a.backend,
                 "compute backend (auto: cuda, else a Vulkan GPU, when built with them and present; else cpu)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "vulkan"}));
  app.add_option("--dump-graph", a.dump_graph, "print a step graph as text and exit")
      ->check(CLI::IsMember({"prefill", "decode", "verify", "mtp"}));
  app.add_flag("--ignore-eos", a.ignore_eos, "keep generating after the end-of-text token");
  app.footer(
      "Examples:\n"
      "  qwen35                                      # embedded model, Shakespeare prompt, MTP on\n"
      "  qwen35 -m Qwen3.5-9B-Q8_0.gguf -p \"Hi\" -n 64 --mtp 2\n"
      "  qwen35 -m model.gguf --temp 0.8 --top-p 0.95 --seed 42\n"
      "  qwen35 -m model.gguf --dump-graph verify --mtp 3 > verify.txt\n"
      "MTP speed for K = 1..N (tok/s, acceptance, greedy parity): bench -m model.gguf --spec 1,2,3,4");
}

// The K/V cache type a run takes: --kv-type, or auto's choice for the run's precision.
gl::DType kv_type_of(const gl::qwen35::Model& m, const Args& a) {
  return a.kv_type.value_or(gl::qwen35::default_kv_type(a.precision.value_or(m.default_precision())));
}

int dump_graph(const gl::qwen35::Model& m, gl::Backend& be, const Args& a, int k) {
  gl::qwen35::Cache cache(m, std::min(a.ctx, 256), be, kv_type_of(m, a));
  const int n_kv = cache.n_ctx();
  gl::DumpOptions opt;
  opt.show_offsets = false;
  if (a.dump_graph == "mtp") {
    gl::qwen35::Handoff io(m, be, 1);
    gl::qwen35::MtpCache mc(m, n_kv, be, kv_type_of(m, a));
    gl::dump_text(gl::qwen35::build_mtp_step(m, mc, io, {.n_rows = 1, .n_kv = n_kv}).graph, std::cout, opt);
    return 0;
  }
  gl::qwen35::StepShape sh{.n_tokens = 1, .n_kv = n_kv};
  if (a.dump_graph == "prefill") sh.n_tokens = std::min(a.batch, n_kv);
  if (a.dump_graph == "verify") sh = {.n_tokens = k + 1, .n_kv = n_kv, .n_outputs = k + 1, .n_states = k + 1};
  gl::dump_text(gl::qwen35::build_step(m, cache, sh).graph, std::cout, opt);
  return 0;
}

// --backend vulkan: the Vulkan device (discrete GPU first); null after printing why not.
std::unique_ptr<gl::Backend> make_vulkan_backend() {
#ifdef GL_HAVE_VULKAN
  gl::Result<std::unique_ptr<gl::Backend>> vk = gl::vulkan::make_backend();
  if (vk) return std::move(*vk);
  fmt::print(stderr, "qwen35: --backend vulkan: {}\n", vk.error());
#else
  fmt::print(stderr, "qwen35: this build has no Vulkan backend (configure with -DGL_VULKAN=ON); use --backend cpu\n");
#endif
  return nullptr;
}

// The backend --backend names; null (after printing why) when it cannot be had. auto: CUDA, else a
// Vulkan GPU (not a CPU driver such as lavapipe), else the CPU.
std::unique_ptr<gl::Backend> make_backend(const Args& a) {
  if (a.backend == "vulkan") return make_vulkan_backend();
#ifdef GL_HAVE_CUDA
  const bool has_gpu = gl::cuda::device_count() > 0;
  if (a.backend == "cuda" && !has_gpu) {
    fmt::print(stderr, "qwen35: --backend cuda: no CUDA device is visible (driver missing or no GPU)\n");
    return nullptr;
  }
  if (a.backend == "cuda" || (a.backend == "auto" && has_gpu)) return gl::cuda::make_backend();
#else
  if (a.backend == "cuda") {
    fmt::print(stderr, "qwen35: this build has no CUDA backend (configure with the cuda preset); use --backend cpu\n");
    return nullptr;
  }
#endif
#ifdef GL_HAVE_VULKAN
  if (a.backend == "auto" && gl::vulkan::has_gpu()) {
    if (gl::Result<std::unique_ptr<gl::Backend>> vk = gl::vulkan::make_backend()) return std::move(*vk);
  }
#endif
  return gl::cpu::make_backend({.n_threads = a.threads});
}

int run(const Args& a) {
  if (!std::filesystem::exists(a.model)) {
    fmt::print(stderr, "qwen35: model file '{}' not found (pass -m path/to/model.gguf)\n", a.model);
    return 1;
  }
  auto backend = make_backend(a);
  if (!backend) return 1;
  gl::Backend& be = *backend;
  auto model = gl::qwen35::Model::load(a.model, be);
  if (!model) return fmt::print(stderr, "qwen35: {}\n", model.error()), 1;
  const gl::qwen35::Model& m = **model;
  if (a.mtp > 0 && !m.has_mtp()) {
    fmt::print(stderr,
               "qwen35: {} has no MTP tensors, so --mtp {} cannot run.\n"
               "        Run without MTP: add --mtp 0 (or drop --mtp).\n",
               a.model, a.mtp);
    return 1;
  }
  // Default K: on the CPU a verify of K + 1 rows costs about K + 1 decode steps of the embedded model
  // now that a decode step keeps both cores busy (docs/bench/cpu-step.md: K = 1 1.07x, K = 2 0.82x);
  // elsewhere K = 2.
  const int k_default = be.name() == "cpu" ? 1 : 2;
  const int k = a.mtp < 0 ? (m.has_mtp() ? k_default : 0) : a.mtp;
  if (!a.dump_graph.empty()) return dump_graph(m, be, a, std::max(k, 1));

  const int64_t n_train = m.hparams().n_ctx_train;
  if (n_train > 0 && a.ctx > n_train)
    fmt::print(stderr,
               "qwen35: warning: -c {} exceeds the {} tokens this model was trained on; text past position {} "
               "may degrade\n",
               a.ctx, n_train, n_train);
  auto tok = gl::Tokenizer::from_gguf(m.gguf());
  if (!tok) return fmt::print(stderr, "qwen35: {}\n", tok.error()), 1;
  gl::qwen35::RunConfig cfg{.n_ctx = a.ctx, .n_batch = a.batch, .mtp_k = k, .sampling = a.sampling};
  cfg.precision = a.precision.value_or(m.default_precision());
  if (!a.precision && cfg.precision == gl::Precision::FAST)
    fmt::print(stderr,
               "qwen35: quantized weights: --precision fast (int8 activation blocks, as llama.cpp; "
               "--precision exact for float math){}\n",
               a.kv_type ? "" : " and an f16 KV cache (--kv-type f32 keeps K and V exact)");
  cfg.kv_type = kv_type_of(m, a);
  cfg.mtp_p_min = a.mtp_p_min;
  auto session = gl::qwen35::Session::create(m, be, cfg);
  if (!session) return fmt::print(stderr, "qwen35: {}\n", session.error()), 1;
  return generate(**session, *tok, a.prompt, a.n_predict, a.ignore_eos, k);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qwen35: generate text with a Qwen3.5 / Qwen3.6 GGUF, with MTP speculative decoding"};
  Args a;
  add_options(app, a);
  CLI11_PARSE(app, argc, argv);
  return run(a);
}
