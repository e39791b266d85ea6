// bench.h - what the bench measures and reports: the run's settings, the model's decode
// footprint, one result row per test (pp N, tg N, spec K), and the functions that fill them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/models/qwen35.h"
#include "ggml-lite/status.h"

namespace bench {

struct Params {
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> spec;  // K values
  bool force_accept = false;
  int reps = 5;
  int warmup = 1;
  int n_ctx = 0;  // 0: enough for the tests
  int tg_prompt = 8;
  int greedy_chain = 8;  // tg rows: decode steps chained on the device (RunConfig::greedy_chain)
  gl::Precision precision = gl::Precision::EXACT;  // RunConfig::precision; a column of the table
};

// Decode steps run untimed inside every tg / spec repetition before timing starts, so graph
// building and planning of a fresh session (per shape) are not counted: two rounds.
inline int session_warm_tokens(int k) { return 2 * (k + 1); }

// Positions a tg / spec repetition may use: prompt, warm-up and n tokens, each of the two
// phases overshooting by up to one round, and the last round's verify block.
inline int gen_positions(const Params& p, int n, int k) {
  const int round = k > 0 ? k + 1 : std::max(1, p.greedy_chain);  // plain greedy: a chain per call
  return p.tg_prompt + session_warm_tokens(k) + n + 2 * round + (k + 1);
}

struct ModelInfo {
  std::string label;  // file path, or "synth qwen35-9b:bf16 seed 0"
  std::string name;   // the table's model column: file name or preset
  std::string type;   // the tensor type holding most bytes: "bf16", "q8_0"
  std::string arch;
  uint64_t n_params = 0;                // every tensor, MTP included
  uint64_t model_bytes = 0;             // tensor data
  uint64_t weight_bytes_per_token = 0;  // read by one trunk decode step (see decode_weight_bytes)
  int n_layer = 0, n_nextn = 0;
};

struct BackendInfo {
  std::string name;    // "cpu", "cuda"
  std::string device;  // "2 threads", "cuda:0, 140.4 GiB"
  int threads = 0;
  bool device_memory = false;  // memory is device memory in use (else the process's resident set)
};

struct SpecResult {
  int k = 0;
  bool forced = false;
  std::vector<double> acceptance_at;  // per draft position
  double acceptance = 0;
  double mean_accepted_len = 0;  // tokens per round
  int64_t rounds = 0;
  std::optional<double> speedup;  // tok/s over tg N of the same run
  // Seconds per step (median over repetitions), and relative to one decode step of tg N.
  double t_draft_step = 0, t_verify_step = 0, t_catchup_step = 0;
  std::optional<double> draft_cost, verify_cost, catchup_cost;
};

struct Row {
  std::string test;  // "pp 512", "tg 128", "spec 2 (forced)"
  std::string kind;  // "pp", "tg", "spec"
  int n_prompt = 0;
  int n_gen = 0;
  std::vector<double> samples;  // tok/s per timed repetition
  double tok_s = 0;             // median
  double stddev = 0;
  std::optional<double> floor_pct;  // decode rows: percent of the bandwidth floor
  std::optional<SpecResult> spec;
  uint64_t peak_memory = 0;  // bytes, after this test
};

struct Report {
  ModelInfo model;
  BackendInfo backend;
  Params params;
  double bandwidth_gbs = 0;  // GB/s (1e9)
  bool bandwidth_measured = true;
  double floor_tok_s = 0;
  uint64_t peak_memory = 0;
  int64_t cuda_graph_captures = -1, cuda_graph_replays = -1;  // -1: not a CUDA backend
  std::vector<Row> rows;
};

// ---- measure.cpp ----
// Bytes of every weight one trunk decode step reads: trunk layers (not the MTP layers), the
// output norm and LM head, one row of token_embd; MoE expert tensors count n_expert_used /
// n_expert of their bytes.
uint64_t decode_weight_bytes(const gl::qwen35::Model& m);
ModelInfo model_info(const gl::qwen35::Model& m, std::string label, std::string name);
// Copy bandwidth in GB/s, read + write: device-to-device copy_tensor on a device backend, a
// threaded memcpy of 256 MB on the host. Errors: no memory for the buffers.
gl::Result<double> measure_bandwidth(gl::Backend& be, int threads);
// Device memory in use (CUDA, all processes), else the process's resident set.
uint64_t memory_in_use(const BackendInfo& b);

// The tg / spec prompt: fixed English text through the model's tokenizer (so a trained model
// shows real acceptance), or spread ids when the GGUF has no usable tokenizer.
std::vector<int32_t> gen_prompt(const gl::qwen35::Model& m, int n);

gl::Result<Row> run_pp(const gl::qwen35::Model& m, gl::Backend& be, const Params& p, int n);
gl::Result<Row> run_tg(const gl::qwen35::Model& m, gl::Backend& be, const Params& p, const std::vector<int32_t>& prompt,
                       int n);
// decode: the tg N row of the same run (for the step costs), if any.
gl::Result<Row> run_spec(const gl::qwen35::Model& m, gl::Backend& be, const Params& p,
                         const std::vector<int32_t>& prompt, int n, int k, const Row* decode);

// ---- report.cpp ----
void print_markdown_header(const Report& r);
void print_markdown_row(const Report& r, const Row& row);
void print_markdown_footer(const Report& r);
std::string to_json(const Report& r);
// Writes text to path through a temp file in the same folder and a rename.
gl::Status write_file_atomic(const std::string& path, const std::string& text);

}  // namespace bench
