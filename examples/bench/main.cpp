// bench - llama-bench for ggml-lite's Qwen3.5: prefill, decode and MTP speculative decoding
// speed, against the bandwidth floor of decode (docs PERF.md lists what it must report).
//
//   bench -m model.gguf                                   # pp 512, tg 128; CUDA when present
//   bench --synth qwen35-9b:bf16 -p 512 -n 128 --spec 1,2,3 --force-accept
//   bench --synth qwen35-35b-a3b:q8_0 --backend cuda -r 5 --json -o 35b.json
//   bench --synth tiny -p 32 -n 16 --spec 2 --force-accept -r 2        # CPU smoke run
//   bench -m models/default/tiny-shakespeare-f16.gguf --spec 1,2        # real acceptance, greedy parity
//
// --synth builds the model gguf-synth would write (same preset, type, seed) in memory, so a
// 70 GB model needs no disk. Rows: pp N (one chunk, fresh cache per repetition), tg N (greedy
// decode after a short prompt), spec K (MTP with K drafts; --force-accept accepts every draft,
// which measures the loop's ceiling and does not produce the model's output; otherwise the row
// says whether its tokens equal tg N's, as greedy MTP must); -d D runs every row again after D
// context tokens (untimed; "pp 512 @ d32768", as llama-bench -d). Each row is the
// median of -r repetitions after --warmup ones; % floor = tok/s / (bandwidth / weight bytes
// read per decode token).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "bench.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/models/session.h"
#include "gguf-tools/quant_mix.h"
#include "gguf-tools/synth.h"
#ifdef GL_HAVE_VULKAN
#include "ggml-lite/vulkan.h"
#endif
#ifdef GL_HAVE_CUDA
#include "ggml-lite/cuda.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string model;
  std::string synth;  // PRESET[:TYPE]
  uint64_t seed = 0;
  std::string backend;  // empty: cuda when compiled and a device exists, else cpu
  int threads = 0;
  double bandwidth = 0;  // GB/s; 0: measure
  bool json = false;
  std::string out;
  bench::Params params;
  std::optional<gl::Precision> precision;  // --precision auto (nullopt): the model's default_precision()
  std::optional<gl::DType> kv_type;        // --kv-type auto (nullopt): kv_type_for(precision)
};

void add_options(CLI::App& app, Args& a) {
  auto* m = app.add_option("-m,--model", a.model, "Qwen3.5 GGUF file");
  auto* s = app.add_option("--synth", a.synth,
                           "synthetic model PRESET[:TYPE] built in memory (type f32|f16|bf16|q8_0, default bf16, or a "
                           "llama.cpp file type such as q4_k_m with pooled rows: for speed, not values; "
                           "presets: gguf-synth --list)");
  m->excludes(s);
  app.add_option("--seed", a.seed, "seed of the synthetic model (as gguf-synth --seed)");
  app.add_option("--backend", a.backend, "cpu, cuda or vulkan (default: cuda when built with it and a device exists)")
      ->check(CLI::IsMember({"cpu", "cuda", "vulkan"}));
  app.add_option("-t,--threads", a.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  bench::Params& p = a.params;
  app.add_option("-p,--n-prompt", p.n_prompt, "prompt sizes for pp rows (list; 0 = none)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-n,--n-gen", p.n_gen, "generated tokens for tg and spec rows (list; 0 = none)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-d,--depth", p.depth, "tokens already in the context before every row (list, as llama-bench -d)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--spec", p.spec, "MTP draft counts K for spec rows (list)")->delimiter(',')->check(CLI::Range(1, 16));
  app.add_option("--greedy-chain", p.greedy_chain, "tg rows: decode steps chained on the device per host round trip")
      ->check(CLI::Range(1, 64));
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
  app.add_option("--mtp-p-min", p.mtp_p_min,
                 "spec rows: adaptive K, drafting stops when the drafts' probability falls below this (0 = off)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--force-accept", p.force_accept,
               "spec rows accept every draft unchecked (loop ceiling; not the model's output)");
  app.add_option("-r,--repetitions", p.reps, "timed repetitions per row")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--warmup", p.warmup,
                 "untimed repetitions before each row (pp rows: also the ones that capture a CUDA graph)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_option("-c,--ctx", p.n_ctx, "context size (default: enough for the rows)")->check(CLI::PositiveNumber);
  app.add_option("--bandwidth", a.bandwidth, "memory bandwidth in GB/s for the floor (default: measured)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", a.json, "print JSON to stdout instead of the markdown table");
  app.add_option("-o,--output", a.out, "also write the JSON to this file (atomically)");
}

gl::Status check_args(Args& a) {
  if (a.model.empty() && a.synth.empty()) return gl::Error("give a model: -m FILE or --synth PRESET[:TYPE]");
  bench::Params& p = a.params;
  std::erase(p.n_prompt, 0);
  std::erase(p.n_gen, 0);
  if (!p.spec.empty() && p.n_gen.empty()) return gl::Error("--spec needs generated tokens (-n N with N > 0)");
  if (p.force_accept && p.spec.empty()) return gl::Error("--force-accept needs --spec K");
  const std::filesystem::path out_dir = std::filesystem::path(a.out).parent_path();
  if (!a.out.empty() && !out_dir.empty() && !std::filesystem::is_directory(out_dir))
    return gl::Error(fmt::format("-o {}: folder '{}' does not exist", a.out, out_dir.string()));
  return {};
}

struct BackendSetup {
  std::unique_ptr<gl::Backend> be;
  bench::BackendInfo info;
};

// --backend vulkan: the first discrete GPU, else the first Vulkan device (lavapipe included).
gl::Result<BackendSetup> make_vulkan_backend(gl::Precision precision) {
#ifdef GL_HAVE_VULKAN
  gl::Result<std::unique_ptr<gl::Backend>> vk = gl::vulkan::make_backend({.precision = precision});
  if (!vk) return gl::Error("--backend vulkan: " + vk.error());
  std::string dev = "vulkan";
  for (const gl::vulkan::DeviceInfo& d : gl::vulkan::devices())
    if (d.type == "discrete" || dev == "vulkan") dev = fmt::format("vulkan: {} ({})", d.name, d.type);
  return BackendSetup{std::move(*vk), {.name = "vulkan", .device = dev, .device_memory = false}};
#else
  (void)precision;
  return gl::Error("--backend vulkan: this build has no Vulkan backend (configure with -DGL_VULKAN=ON)");
#endif
}

gl::Result<BackendSetup> make_backend(const Args& a) {
  std::string name = a.backend;
  if (name == "vulkan") return make_vulkan_backend(a.precision.value_or(gl::Precision::EXACT));
#ifdef GL_HAVE_CUDA
  if (name.empty()) name = gl::cuda::device_count() > 0 ? "cuda" : "cpu";
  if (name == "cuda") {
    if (gl::cuda::device_count() == 0) return gl::Error("--backend cuda: no CUDA device found");
    const gl::cuda::MemoryInfo mi = gl::cuda::memory_info(0);
    const std::string dev = fmt::format("cuda:0, {:.1f} GiB", static_cast<double>(mi.total) / (1 << 30));
    return BackendSetup{gl::cuda::make_backend({.precision = a.precision.value_or(gl::Precision::EXACT)}),
                        {.name = "cuda", .device = dev, .device_memory = true}};
  }
#else
  if (name == "cuda")
    return gl::Error("--backend cuda: this build has no CUDA backend (configure with the cuda preset)");
#endif
  const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return BackendSetup{
      gl::cpu::make_backend({.n_threads = threads}),
      {.name = "cpu", .device = fmt::format("{} thread{}", threads, threads == 1 ? "" : "s"), .threads = threads}};
}

// Load progress on stderr: redrawn in place on a terminal, every 10% of a large model otherwise.
gl::qwen35::Model::LoadProgress progress_printer(const std::string& what) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto last = std::make_shared<std::pair<Clock::time_point, int>>(Clock::now(), 0);
  return [what, tty, last](uint64_t done, uint64_t total) {
    const int tenth = static_cast<int>(10 * done / std::max<uint64_t>(total, 1));
    const bool end = done == total;
    if (tty && (end || Clock::now() - last->first > std::chrono::milliseconds(200))) {
      fmt::print(stderr, "\rbench: {} {:.2f} / {:.2f} GB{}", what, static_cast<double>(done) / 1e9,
                 static_cast<double>(total) / 1e9, end ? "\n" : "");
      last->first = Clock::now();
    } else if (!tty && total >= (uint64_t{1} << 30) && tenth > last->second) {
      fmt::print(stderr, "bench: {} {}%\n", what, 10 * tenth);
      last->second = tenth;
    }
  };
}

struct LoadedModel {
  std::unique_ptr<gl::qwen35::Model> model;
  bench::ModelInfo info;
};

// --synth PRESET:TYPE: f32, f16, bf16 and q8_0 as gguf-synth writes them; a llama.cpp file type
// (q4_k_m, iq4_xs, ...) as llama-quantize mixes the Q8_0 model, with pooled rows (synth.h).
gl::Result<gl::tools::SynthOptions> synth_options(const std::string& preset, const std::string& type, uint64_t seed) {
  const std::optional<gl::DType> dt = gl::dtype_from_name(type);
  if (dt && (*dt == gl::DType::F32 || *dt == gl::DType::F16 || *dt == gl::DType::BF16 || *dt == gl::DType::Q8_0))
    return gl::tools::SynthOptions{.preset = preset, .type = *dt, .seed = seed};
  if (!gl::tools::mix_file_type_by_name(type))
    return gl::Error(fmt::format("unknown type '{}' (use f32, f16, bf16, q8_0 or a file type: {})", type,
                                 gl::tools::mix_file_type_names()));
  return gl::tools::SynthOptions{.preset = preset, .type = gl::DType::Q8_0, .seed = seed, .mix = type};
}

gl::Result<LoadedModel> load_model(const Args& a, gl::Backend& be) {
  const auto t0 = Clock::now();
  gl::Result<std::unique_ptr<gl::qwen35::Model>> m = gl::Error("");
  std::string label, name;
  if (!a.model.empty()) {
    if (!std::filesystem::is_regular_file(a.model)) return gl::Error(fmt::format("model file '{}' not found", a.model));
    m = gl::qwen35::Model::load(a.model, be, progress_printer("loading " + a.model));
    label = a.model;
    name = std::filesystem::path(a.model).filename().string();
  } else {
    const size_t colon = a.synth.find(':');
    const std::string preset = a.synth.substr(0, colon);
    const std::string type = colon == std::string::npos ? "bf16" : a.synth.substr(colon + 1);
    gl::Result<gl::tools::SynthOptions> o = synth_options(preset, type, a.seed);
    if (!o) return gl::Error(fmt::format("--synth {}: {}", a.synth, o.error()));
    auto s = gl::tools::SynthModel::create(*o);
    if (!s) return gl::Error(fmt::format("--synth {}: {}", a.synth, s.error()));
    auto fill = [&s](const gl::GgufTensorInfo& t, void* dst) { return s->fill(t, dst); };
    m = gl::qwen35::Model::load(s->layout(), fill, be, progress_printer("generating " + a.synth));
    label = fmt::format("synth {}:{} seed {}{}", preset, type, a.seed, o->mix.empty() ? "" : " (pooled rows)");
    name = preset;
  }
  if (!m) return gl::Error(m.error());
  bench::ModelInfo info = bench::model_info(**m, label, name);
  fmt::print(stderr, "bench: {} ready on {} ({:.3f} GB in {:.1f} s)\n", label, be.name(),
             static_cast<double>(info.model_bytes) / 1e9, std::chrono::duration<double>(Clock::now() - t0).count());
  return LoadedModel{std::move(*m), std::move(info)};
}

// The context every row needs; with -c, an error naming the first row that does not fit.
gl::Status resolve_ctx(bench::Params& p) {
  int need = 1;
  std::string what;
  auto want = [&](int n, std::string w) {
    if (n > need) need = n, what = std::move(w);
  };
  for (int d : p.depth) {
    const std::string at = bench::depth_label(d);
    for (int n : p.n_prompt) want(d + n, fmt::format("pp {}{}", n, at));
    for (int n : p.n_gen) {
      want(bench::gen_positions(p, n, 0, d), fmt::format("tg {}{}", n, at));
      for (int k : p.spec) want(bench::gen_positions(p, n, k, d), fmt::format("spec {} with -n {}{}", k, n, at));
    }
  }
  if (p.n_ctx == 0) {
    p.n_ctx = (need + 255) / 256 * 256;
    return {};
  }
  if (need > p.n_ctx)
    return gl::Error(fmt::format("{} needs a context of {} positions, more than -c {}", what, need, p.n_ctx));
  return {};
}

void note_memory(bench::Report& r, bench::Row& row) {
  row.peak_memory = bench::memory_in_use(r.backend);
  r.peak_memory = std::max(r.peak_memory, row.peak_memory);
}

gl::Status run_rows(bench::Report& r, const gl::qwen35::Model& m, gl::Backend& be, bool json) {
  const bench::Params& p = r.params;
  auto add = [&](gl::Result<bench::Row> row) -> gl::Status {
    if (!row) return gl::Error(row.error());
    if (row->kind != "pp" && r.floor_tok_s > 0) row->floor_pct = 100.0 * row->tok_s / r.floor_tok_s;
    note_memory(r, *row);
    r.rows.push_back(std::move(*row));
    if (!json) bench::print_markdown_row(r, r.rows.back());
    return {};
  };
  auto say = [json](const std::string& test) {
    if (json) fmt::print(stderr, "bench: {}\n", test);
  };
  for (int d : p.depth) {
    const std::string at = bench::depth_label(d);
    for (int n : p.n_prompt) {
      say(fmt::format("pp {}{}", n, at));
      GL_TRY(add(bench::run_pp(m, be, p, n, d)));
    }
    const std::vector<int32_t> prompt =
        p.n_gen.empty() ? std::vector<int32_t>{} : bench::gen_prompt(m, bench::gen_prompt_len(p, d));
    for (int n : p.n_gen) {
      say(fmt::format("tg {}{}", n, at));
      GL_TRY(add(bench::run_tg(m, be, p, prompt, n, d)));
      const size_t decode = r.rows.size() - 1;
      for (int k : p.spec) {
        say(fmt::format("spec {} @ tg {}{}", k, n, at));
        GL_TRY(add(bench::run_spec(m, be, p, prompt, n, k, &r.rows[decode], d)));
      }
    }
  }
  return {};
}

int fail(const std::string& message) {
  fmt::print(stderr, "bench: {}\n", message);
  return 1;
}

int run(Args& a) {
  if (gl::Status st = check_args(a); !st) return fail(st.error());
  if (gl::Status st = resolve_ctx(a.params); !st) return fail(st.error());
  bench::Report r;
  r.bandwidth_measured = a.bandwidth <= 0;
  r.bandwidth_gbs = a.bandwidth;
  if (r.bandwidth_measured) {
    // On a backend of its own, before the model loads: its buffers (which the CUDA pool would
    // keep cached) are freed with it, so they count neither against the model nor in memory.
    auto probe = make_backend(a);
    if (!probe) return fail(probe.error());
    gl::Result<double> bw = bench::measure_bandwidth(*probe->be, probe->info.threads);
    if (!bw) return fail(bw.error());
    r.bandwidth_gbs = *bw;
  }
  auto setup = make_backend(a);
  if (!setup) return fail(setup.error());
  gl::Backend& be = *setup->be;
  r.backend = setup->info;
  auto loaded = load_model(a, be);
  if (!loaded) return fail(loaded.error());
  const gl::qwen35::Model& m = *loaded->model;
  a.params.precision = a.precision.value_or(m.default_precision());  // each run sets it on the backend
  a.params.kv_type = a.kv_type.value_or(gl::qwen35::default_kv_type(a.params.precision));
  if (!a.params.spec.empty() && !m.has_mtp())
    return fail(loaded->info.label + " has no MTP layer (nextn_predict_layers is 0), so --spec cannot run");
  r.model = loaded->info;
  r.params = a.params;
  r.floor_tok_s = r.bandwidth_gbs * 1e9 / static_cast<double>(r.model.weight_bytes_per_token);
  r.peak_memory = bench::memory_in_use(r.backend);

  if (!a.json) bench::print_markdown_header(r);
  if (gl::Status st = run_rows(r, m, be, a.json); !st) return fail(st.error());
#ifdef GL_HAVE_CUDA
  if (r.backend.name == "cuda") {
    const gl::cuda::GraphStats gs = gl::cuda::graph_stats(be);
    r.cuda_graph_captures = gs.captures, r.cuda_graph_replays = gs.replays;
  }
#endif
  const std::string json = bench::to_json(r);
  if (a.json) {
    fmt::print("{}", json);
  } else {
    bench::print_markdown_footer(r);
  }
  if (!a.out.empty()) {
    if (gl::Status st = bench::write_file_atomic(a.out, json); !st) return fail(st.error());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench: prefill, decode and MTP speculative decoding speed of a Qwen3.5 GGUF (llama-bench style)"};
  app.footer(
      "Examples:\n"
      "  bench -m model.gguf                                      # pp 512, tg 128\n"
      "  bench --synth qwen35-9b:bf16 --spec 1,2,3 --force-accept  # in-memory model, MTP loop ceiling\n"
      "  bench -m model.gguf -p 512 -n 128 -d 0,32768 --kv-type f16  # again at a 32k context (llama-bench -d)\n"
      "  bench --synth qwen35-35b-a3b:q8_0 -p 512 -n 128 --json -o 35b.json\n"
      "  bench -m models/default/tiny-shakespeare-f16.gguf --spec 1,2 --backend cpu");
  Args a;
  add_options(app, a);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the error and a hint
    return rc == 0 ? 0 : 1;
  }
  return run(a);
}
