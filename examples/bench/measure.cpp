// measure.cpp - the timed tests (pp, tg, spec), copy bandwidth, the decode weight footprint and
// memory in use. Every test runs warm-up repetitions first, then reports the median tok/s.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <span>

#include "bench.h"
#include "ggml-lite/context.h"
#include "ggml-lite/models/runner.h"
#include "ggml-lite/models/session.h"
#include "ggml-lite/models/tokenizer.h"
#include "gguf-tools/quant_mix.h"
#ifdef GL_HAVE_CUDA
#include "ggml-lite/cuda.h"
#endif

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using gl::qwen35::Model;
using gl::qwen35::SpecStats;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0, ss = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

void summarize(Row& row) {
  row.tok_s = median(row.samples);
  row.stddev = stddev(row.samples);
}

// Token ids spread over the vocabulary (a fixed sequence: every run sees the same prompt).
std::vector<int32_t> spread_ids(int64_t n_vocab, int n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int32_t& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab));
  }
  return ids;
}

SpecStats minus(const SpecStats& a, const SpecStats& b) {
  SpecStats d = a;
  for (size_t i = 0; i < d.drafted.size() && i < b.drafted.size(); ++i) {
    d.drafted[i] -= b.drafted[i];
    d.accepted[i] -= b.accepted[i];
  }
  d.rounds -= b.rounds, d.emitted -= b.emitted;
  d.t_draft -= b.t_draft, d.t_verify -= b.t_verify, d.t_catchup -= b.t_catchup;
  d.n_draft_steps -= b.n_draft_steps, d.n_verify_steps -= b.n_verify_steps, d.n_catchup_steps -= b.n_catchup_steps;
  return d;
}

// CUDA graphs the backend has captured so far (0 for other backends).
int64_t graph_captures(const gl::Backend& be) {
#ifdef GL_HAVE_CUDA
  return gl::cuda::graph_stats(be).captures;
#else
  (void)be;
  return 0;
#endif
}

// Untimed one-off work (a context fill, a prompt) runs with CUDA graph capture paused. A fill's
// chunks, a shape each and seen once a repetition, would be captured on their second sight and
// push the timed step's graph out of the backend's cache (48 graphs): at a 32k depth every
// repetition then timed a capture. No-op on other backends.
class EagerScope {
 public:
  explicit EagerScope(gl::Backend& be) : be_(be) { pause(true); }
  ~EagerScope() { pause(false); }
  EagerScope(const EagerScope&) = delete;
  EagerScope& operator=(const EagerScope&) = delete;

 private:
  void pause(bool paused) {
#ifdef GL_HAVE_CUDA
    gl::cuda::pause_graph_capture(be_, paused);
#else
    (void)paused;
#endif
  }
  gl::Backend& be_;
};

struct GenRep {
  double tok_s = 0;
  SpecStats spec;               // of the timed window only
  std::vector<int32_t> tokens;  // every token generated (warm-up included), for greedy parity
};

// One tg / spec repetition: a fresh session, the prompt, untimed warm-up tokens, then at least
// n generated tokens. tok/s is tokens generated / generation time over the timed window.
gl::Result<GenRep> gen_once(const Model& m, gl::Backend& be, const gl::qwen35::RunConfig& cfg,
                            const std::vector<int32_t>& prompt, int n) {
  auto s = gl::qwen35::Session::create(m, be, cfg);
  if (!s) return gl::Error(s.error());
  gl::qwen35::Session& ss = **s;
  {
    EagerScope eager(be);
    GL_TRY(ss.prefill(prompt));
  }
  auto step = [&ss]() -> gl::Status {
    gl::Result<int32_t> t = ss.next();
    return t ? gl::Status{} : gl::Status(gl::Error(t.error()));
  };
  while (ss.stats().n_generated < session_warm_tokens(cfg.mtp_k)) GL_TRY(step());
  const gl::qwen35::SessionStats before = ss.stats();
  while (ss.stats().n_generated - before.n_generated < n) GL_TRY(step());
  const gl::qwen35::SessionStats& after = ss.stats();
  GenRep r;
  r.tok_s = static_cast<double>(after.n_generated - before.n_generated) / (after.t_generate - before.t_generate);
  r.spec = minus(after.spec, before.spec);
  r.tokens.assign(ss.tokens().begin() + static_cast<std::ptrdiff_t>(prompt.size()), ss.tokens().end());
  return r;
}

// Prefill chunk of a deep context (pp and tg rows at depth): the prompt runs untimed.
constexpr int kDepthChunk = 512;

gl::qwen35::RunConfig gen_config(const Params& p, int k, int depth) {
  gl::qwen35::RunConfig cfg;
  cfg.n_ctx = p.n_ctx;
  cfg.n_batch = depth > 0 ? kDepthChunk : std::max(1, p.tg_prompt);
  cfg.mtp_k = k;
  cfg.sampling.temperature = 0.0f;  // greedy
  cfg.force_accept = p.force_accept && k > 0;
  cfg.greedy_chain = p.greedy_chain;
  cfg.precision = p.precision;
  cfg.kv_type = p.kv_type;
  cfg.mtp_p_min = p.mtp_p_min;
  return cfg;
}

double per_step(double t, int64_t n) { return n > 0 ? t / static_cast<double>(n) : 0.0; }

// Acceptance over all timed repetitions; step times as medians over repetitions.
SpecResult spec_result(const std::vector<GenRep>& reps, int k, bool forced, const Row* decode) {
  SpecResult r{.k = k, .forced = forced};
  std::vector<int64_t> drafted(static_cast<size_t>(k), 0), accepted(static_cast<size_t>(k), 0);
  int64_t emitted = 0;
  std::vector<double> draft, verify, catchup;
  for (const GenRep& g : reps) {
    for (size_t i = 0; i < drafted.size() && i < g.spec.drafted.size(); ++i) {
      drafted[i] += g.spec.drafted[i];
      accepted[i] += g.spec.accepted[i];
    }
    r.rounds += g.spec.rounds;
    emitted += g.spec.emitted;
    if (g.spec.n_draft_steps > 0) draft.push_back(per_step(g.spec.t_draft, g.spec.n_draft_steps));
    verify.push_back(per_step(g.spec.t_verify, g.spec.n_verify_steps));
    catchup.push_back(per_step(g.spec.t_catchup, g.spec.n_catchup_steps));
  }
  int64_t d_all = 0, a_all = 0;
  for (size_t i = 0; i < drafted.size(); ++i) {
    r.acceptance_at.push_back(drafted[i] ? static_cast<double>(accepted[i]) / static_cast<double>(drafted[i]) : 0.0);
    d_all += drafted[i], a_all += accepted[i];
  }
  r.acceptance = d_all ? static_cast<double>(a_all) / static_cast<double>(d_all) : 0.0;
  r.mean_accepted_len = r.rounds ? static_cast<double>(emitted) / static_cast<double>(r.rounds) : 0.0;
  r.t_draft_step = median(draft), r.t_verify_step = median(verify), r.t_catchup_step = median(catchup);
  if (decode && decode->tok_s > 0) {
    const double t_decode = 1.0 / decode->tok_s;
    if (!draft.empty()) r.draft_cost = r.t_draft_step / t_decode;
    r.verify_cost = r.t_verify_step / t_decode;
    r.catchup_cost = r.t_catchup_step / t_decode;
  }
  return r;
}

}  // namespace

std::vector<int32_t> gen_prompt(const Model& m, int n) {
  static constexpr const char* kText =
      "First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\n";
  auto tok = gl::Tokenizer::from_gguf(m.gguf());
  std::vector<int32_t> ids;
  if (tok) ids = tok->encode(kText);
  if (ids.empty()) return spread_ids(m.hparams().n_vocab, n);
  while (static_cast<int>(ids.size()) < n) ids.insert(ids.end(), ids.begin(), ids.end());
  ids.resize(static_cast<size_t>(n));
  for (int32_t& id : ids) id = std::clamp<int32_t>(id, 0, static_cast<int32_t>(m.hparams().n_vocab - 1));
  return ids;
}

namespace {

double host_bandwidth(int threads) {
  const size_t bytes = size_t{256} << 20;
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);  // touched: no page faults in the timing
  const int n_chunks = std::max(1, threads);
  const size_t chunk = bytes / static_cast<size_t>(n_chunks);
  std::vector<double> times;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = Clock::now();
#pragma omp parallel for num_threads(n_chunks) schedule(static)
    for (int i = 0; i < n_chunks; ++i)
      std::memcpy(dst.data() + static_cast<size_t>(i) * chunk, src.data() + static_cast<size_t>(i) * chunk, chunk);
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  return 2.0 * static_cast<double>(chunk * static_cast<size_t>(n_chunks)) / median(times) / 1e9;
}

gl::Result<double> device_bandwidth(gl::Backend& be) {
  constexpr int kCopies = 10;  // per timing: one copy of 512 MiB is a fraction of a millisecond on an H200
  for (size_t bytes : {size_t{512} << 20, size_t{64} << 20}) {
    gl::Context ctx;
    const auto n = static_cast<int64_t>(bytes / sizeof(float));
    gl::Tensor* a = ctx.new_tensor(gl::DType::F32, {n}, "bandwidth_src");
    gl::Tensor* b = ctx.new_tensor(gl::DType::F32, {n}, "bandwidth_dst");
    std::unique_ptr<gl::Buffer> buf = be.alloc_buffer(2 * bytes, gl::BufferUsage::COMPUTE);
    if (!buf) continue;
    buf->bind(*a, 0);
    buf->bind(*b, bytes);
    std::vector<double> times;
    for (int rep = 0; rep < 6; ++rep) {
      const auto t0 = Clock::now();
      for (int i = 0; i < kCopies; ++i) be.copy_tensor(*a, 0, *b, 0, bytes);
      GL_TRY(be.synchronize());
      if (rep > 0) times.push_back(seconds_since(t0) / kCopies);
    }
    return 2.0 * static_cast<double>(bytes) / median(times) / 1e9;
  }
  return gl::Error(fmt::format("bandwidth: no {} memory for a 128 MiB copy", be.name()));
}

}  // namespace

uint64_t decode_weight_bytes(const Model& m) {
  const gl::qwen35::Hparams& hp = m.hparams();
  const bool tied = m.gguf().find_tensor("output.weight") == nullptr;
  uint64_t total = 0;
  for (const gl::GgufTensorInfo& t : m.gguf().tensors()) {
    const std::string& name = t.name;
    if (name == "token_embd.weight") {
      total += t.nbytes / static_cast<uint64_t>(t.ne[1]) + (tied ? t.nbytes : 0);  // a row; the LM head if tied
    } else if (name == "output_norm.weight" || name == "output.weight") {
      total += t.nbytes;
    } else if (name.starts_with("blk.") && std::stoi(name.substr(4)) < hp.n_layer) {
      const bool experts = name.find("_exps.") != std::string::npos && hp.n_expert > 0;
      total +=
          experts ? t.nbytes * static_cast<uint64_t>(hp.n_expert_used) / static_cast<uint64_t>(hp.n_expert) : t.nbytes;
    }
  }
  return total;
}

namespace {

// A mix of types (general.file_type of a llama-quantize / gguf-quantize mix, e.g. q4_k_m, whose
// largest tensors may be q6_K) is named as the mix; a single-type file by its type.
std::string mix_label(const gl::GgufFile& f, const std::string& largest) {
  const gl::Result<uint32_t> ft = f.get<uint32_t>("general.file_type");
  if (!ft) return largest;
  for (const gl::tools::MixFileType& mt : gl::tools::mix_file_types()) {
    if (mt.llama_ftype != *ft) continue;
    const bool same = std::equal(mt.name.begin(), mt.name.end(), largest.begin(), largest.end(),
                                 [](char a, char b) { return std::tolower(a) == std::tolower(b); });
    return same ? largest : std::string(mt.name);
  }
  return largest;
}

}  // namespace

ModelInfo model_info(const Model& m, std::string label, std::string name) {
  ModelInfo mi;
  mi.label = std::move(label);
  mi.name = std::move(name);
  mi.arch = m.hparams().arch_name();
  mi.n_layer = m.hparams().n_layer;
  mi.n_nextn = m.hparams().n_nextn;
  std::map<uint32_t, uint64_t> by_type;
  for (const gl::GgufTensorInfo& t : m.gguf().tensors()) {
    mi.n_params += static_cast<uint64_t>(t.nelements());
    mi.model_bytes += t.nbytes;
    by_type[t.ggml_type] += t.nbytes;
  }
  auto most = std::max_element(by_type.begin(), by_type.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  mi.type = most == by_type.end() ? "-" : gl::ggml_type_name(most->first);
  mi.type = mix_label(m.gguf(), mi.type);
  mi.weight_bytes_per_token = decode_weight_bytes(m);
  return mi;
}

gl::Result<double> measure_bandwidth(gl::Backend& be, int threads) {
  if (be.is_host()) return host_bandwidth(threads);
  return device_bandwidth(be);
}

uint64_t memory_in_use(const BackendInfo& b) {
#ifdef GL_HAVE_CUDA
  if (b.device_memory) {
    const gl::cuda::MemoryInfo mi = gl::cuda::memory_info(0);
    return mi.total - mi.free;
  }
#endif
  (void)b;
  // Resident pages now (not the high-water mark, which the bandwidth buffers would set).
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

gl::Result<Row> run_pp(const Model& m, gl::Backend& be, const Params& p, int n, int depth) {
  gl::qwen35::Runner r(m, be, p.n_ctx, 256, p.kv_type);
  be.set_precision(p.precision);  // what a Session does from RunConfig::precision
  const std::vector<int32_t> tokens = spread_ids(m.hparams().n_vocab, n);
  const std::vector<int32_t> context = spread_ids(m.hparams().n_vocab, depth);
  const std::vector<int32_t> out{n - 1};
  Row row{.test = fmt::format("pp {}{}", n, depth_label(depth)), .kind = "pp", .n_prompt = n, .depth = depth};
  // A step shape runs eagerly when first seen and is captured as a CUDA graph when seen again
  // (graph_cache.cuh). Past --warmup, repetitions that capture are warm-up too (at most
  // kCaptureWarmups of them): the timed ones replay, as every later run of the shape does. (With
  // one warm-up, the first timed pp repetition used to include the capture: ~15% below the others.)
  constexpr int kCaptureWarmups = 2;
  int warm = 0;
  while (static_cast<int>(row.samples.size()) < p.reps) {
    r.cache().clear();
    {
      EagerScope eager(be);
      for (int s = 0; s < depth; s += kDepthChunk) {  // the context, untimed
        const int len = std::min(kDepthChunk, depth - s);
        auto l = r.eval(std::span(context).subspan(static_cast<size_t>(s), static_cast<size_t>(len)),
                        std::vector<int32_t>{len - 1});
        if (!l) return gl::Error(l.error());
      }
    }
    const int64_t captures = graph_captures(be);
    const auto t0 = Clock::now();
    auto l = r.eval(tokens, out);  // uploads the inputs and reads the logits back
    if (!l) return gl::Error(l.error());
    const double dt = seconds_since(t0);
    const bool captured = graph_captures(be) > captures;
    if (warm < p.warmup || (captured && warm < p.warmup + kCaptureWarmups)) {
      ++warm;
      continue;
    }
    row.samples.push_back(n / dt);
  }
  summarize(row);
  return row;
}

gl::Result<Row> run_tg(const Model& m, gl::Backend& be, const Params& p, const std::vector<int32_t>& prompt, int n,
                       int depth) {
  Row row{.test = fmt::format("tg {}{}", n, depth_label(depth)),
          .kind = "tg",
          .n_prompt = static_cast<int>(prompt.size()),
          .n_gen = n,
          .depth = depth};
  for (int rep = 0; rep < p.warmup + p.reps; ++rep) {
    auto g = gen_once(m, be, gen_config(p, 0, depth), prompt, n);
    if (!g) return gl::Error(g.error());
    if (rep < p.warmup) continue;
    row.samples.push_back(g->tok_s);
    if (row.tokens.empty()) row.tokens = std::move(g->tokens);
  }
  summarize(row);
  return row;
}

namespace {

// Both runs generated at least warm-up + n tokens; sessions may compute a round or a chain ahead.
bool same_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  return n > 0 && std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
}

}  // namespace

gl::Result<Row> run_spec(const Model& m, gl::Backend& be, const Params& p, const std::vector<int32_t>& prompt, int n,
                         int k, const Row* decode, int depth) {
  const bool forced = p.force_accept;
  Row row{.kind = "spec", .n_prompt = static_cast<int>(prompt.size()), .n_gen = n, .depth = depth};
  row.test = fmt::format("spec {}{}{}{}", k, p.n_gen.size() > 1 ? fmt::format(" @ tg {}", n) : "", depth_label(depth),
                         forced ? " (forced)" : "");
  std::vector<GenRep> timed;
  for (int rep = 0; rep < p.warmup + p.reps; ++rep) {
    auto g = gen_once(m, be, gen_config(p, k, depth), prompt, n);
    if (!g) return gl::Error(g.error());
    if (rep < p.warmup) continue;
    row.samples.push_back(g->tok_s);
    if (row.tokens.empty()) row.tokens = g->tokens;
    timed.push_back(std::move(*g));
  }
  summarize(row);
  row.spec = spec_result(timed, k, forced, decode);
  if (decode && decode->tok_s > 0) row.spec->speedup = row.tok_s / decode->tok_s;
  if (decode && !forced) row.spec->same_tokens = same_prefix(row.tokens, decode->tokens);
  return row;
}

}  // namespace bench
